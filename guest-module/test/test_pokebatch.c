// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace test of pokebatch.c: decoding what text_poke_bp may write,
 * counting a batch's syncs, filling the table from 6.1 text_poke_loc
 * entries (keyed sites left out, odd batches refused) and finding sites.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../dbt/pokebatch.h"

static u8 text[4096];		/* "kernel text": stext is its address */
static unsigned long keyed_pc;	/* the one site rv_pb_keyed() claims */

bool rv_pb_in_text(unsigned long pc)
{
	return pc >= (unsigned long)text && pc + 5 <= (unsigned long)text + sizeof(text);
}

bool rv_pb_keyed(unsigned long pc, unsigned int len)
{
	return pc == keyed_pc;
}

const u8 *rv_pb_bytes(unsigned long pc)
{
	return (const u8 *)pc;
}

static unsigned long at(unsigned int off)
{
	return (unsigned long)text + off;
}

/* one 16-byte struct text_poke_loc */
static void tpl(u8 *e, unsigned int off, unsigned int len, const u8 *new, unsigned int n)
{
	s32 rel = (s32)off;

	memset(e, 0, 16);
	memcpy(e, &rel, 4);
	e[8] = len;
	e[9] = new[0];
	memcpy(e + 10, new, n);
}

static const u8 NOP5[] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
static const u8 NOP2[] = { 0x66, 0x90 };

static void test_decode(void)
{
	struct rv_pb_insn in;
	u8 call[] = { 0xe8, 0x10, 0x00, 0x00, 0x00 };
	u8 back[] = { 0xe9, 0xf0, 0xff, 0xff, 0xff };
	u8 jmp8[] = { 0xeb, 0xfe };
	u8 ret5[] = { 0xc3, 0xcc, 0xcc, 0xcc, 0xcc };
	u8 retbad[] = { 0xc3, 0x90, 0xcc, 0xcc, 0xcc };
	u8 nop5b[] = { 0x0f, 0x1f, 0x40, 0x00, 0x00 };	/* not x86_nops[5] */
	u8 jcc[] = { 0x0f, 0x84, 0x00, 0x00, 0x00 };

	assert(rv_pb_decode(call, 5, 1000, &in) && in.kind == RV_PB_CALL && in.target == 1021);
	assert(rv_pb_decode(back, 5, 1000, &in) && in.kind == RV_PB_JMP && in.target == 1005 - 16);
	assert(rv_pb_decode(jmp8, 2, 1000, &in) && in.kind == RV_PB_JMP && in.target == 1000);
	assert(rv_pb_decode(ret5, 5, 1000, &in) && in.kind == RV_PB_RET);
	assert(rv_pb_decode(ret5, 1, 1000, &in) && in.kind == RV_PB_RET);
	assert(rv_pb_decode(NOP5, 5, 1000, &in) && in.kind == RV_PB_NOP);
	assert(rv_pb_decode(NOP2, 2, 1000, &in) && in.kind == RV_PB_NOP);
	assert(!rv_pb_decode(retbad, 5, 1000, &in));
	assert(!rv_pb_decode(call, 2, 1000, &in));
	assert(!rv_pb_decode(jmp8, 5, 1000, &in));
	assert(!rv_pb_decode(NOP5, 2, 1000, &in));
	assert(!rv_pb_decode(NOP2, 5, 1000, &in));
	assert(!rv_pb_decode(nop5b, 5, 1000, &in));
	assert(!rv_pb_decode(jcc, 5, 1000, &in));
}

static void test_nsync(void)
{
	u8 tp[3 * 16];
	u8 int3 = 0xcc, ret = 0xc3, call[] = { 0xe8, 0, 0, 0, 0 };

	tpl(tp, 0, 1, &int3, 1);		/* int3 only: one sync */
	assert(rv_pb_nsync(tp, 1) == 1);
	tpl(tp, 0, 1, &ret, 1);			/* one byte, first byte: two */
	assert(rv_pb_nsync(tp, 1) == 2);
	tpl(tp, 0, 5, call, 5);			/* tail and first byte: three */
	assert(rv_pb_nsync(tp, 1) == 3);
	tpl(tp + 16, 8, 1, &int3, 1);
	assert(rv_pb_nsync(tp, 2) == 3);
}

static void test_fill(void)
{
	static struct rv_pokebatch pb;
	static u8 tp[(RV_PB_MAX + 1) * 16];
	u8 call[5] = { 0xe8 };
	const struct rv_pb_site *s;
	unsigned int i, n = 200;
	s32 d;

	/* ftrace turned on: nop5 at every 16th byte becomes call +0x100 */
	for (i = 0; i < n; i++) {
		memcpy(text + 16 * i, NOP5, 5);
		d = 0x100 - 5;
		memcpy(call + 1, &d, 4);
		tpl(tp + 16 * i, 16 * i, 5, call, 5);
	}
	keyed_pc = at(16 * 7);
	assert(rv_pb_fill(&pb, tp, n, (unsigned long)text, 3) == RV_PB_OK);
	assert(pb.n == n - 1);
	assert(pb.thr == (3ULL << RV_PB_GEN_SHIFT) + 3);
	for (i = 0; i < n; i++) {
		s = rv_pb_find(&pb, at(16 * i));
		if (i == 7) {
			assert(!s);
			continue;
		}
		assert(s && s->pc == at(16 * i) && s->len == 5);
		assert(s->old.kind == RV_PB_NOP);
		assert(s->new.kind == RV_PB_CALL && s->new.target == at(16 * i) + 0x100);
		assert(!rv_pb_find(&pb, at(16 * i) + 1));
	}
	assert(!rv_pb_find(&pb, at(16 * n)));
	keyed_pc = 0;

	/* refusals; each leaves the table empty */
	assert(rv_pb_fill(&pb, tp, RV_PB_MAX + 1, (unsigned long)text, 4) == RV_PB_TOO_MANY);
	assert(pb.n == 0);
	tp[16 * 5 + 8] = 6;
	assert(rv_pb_fill(&pb, tp, n, (unsigned long)text, 4) == RV_PB_LEN);
	tp[16 * 5 + 8] = 5;
	assert(rv_pb_fill(&pb, tp, n, (unsigned long)text - 8192, 4) == RV_PB_WHERE);
	tpl(tp + 16 * 9, 16 * 3, 5, call, 5);		/* out of order */
	assert(rv_pb_fill(&pb, tp, n, (unsigned long)text, 4) == RV_PB_ORDER);
	assert(pb.n == 0);
	tpl(tp + 16 * 9, 16 * 9, 5, call, 5);
	text[16 * 4 + 1] = 0x90;			/* something else there */
	assert(rv_pb_fill(&pb, tp, n, (unsigned long)text, 4) == RV_PB_OLD_INSN);
	assert(pb.refused_pc == at(16 * 4));
	/* a kprobe's int3 there: the optimizer's jump to its detour buffer */
	text[16 * 4] = 0xcc;
	assert(rv_pb_fill(&pb, tp, n, (unsigned long)text, 4) == RV_PB_KPROBE);
	assert(pb.n == 0 && pb.refused_pc == at(16 * 4));
	memcpy(text + 16 * 4, NOP5, 5);
	tp[16 * 4 + 10] = 0x0f;				/* a jcc */
	tp[16 * 4 + 11] = 0x84;
	assert(rv_pb_fill(&pb, tp, n, (unsigned long)text, 4) == RV_PB_NEW_INSN);
	assert(pb.n == 0);
	tpl(tp + 16 * 4, 16 * 4, 5, call, 5);
	assert(rv_pb_fill(&pb, tp, n, (unsigned long)text, 5) == RV_PB_OK && pb.n == n);
	assert(pb.refused_pc == 0);

	/* nothing to order but keyed sites: an empty table, syncs counted */
	keyed_pc = at(0);
	assert(rv_pb_fill(&pb, tp, 1, (unsigned long)text, 6) == RV_PB_OK && pb.n == 0);
	assert(pb.thr == (6ULL << RV_PB_GEN_SHIFT) + 3 && !rv_pb_find(&pb, at(0)));
}

int main(void)
{
	test_decode();
	test_nsync();
	test_fill();
	printf("test_pokebatch: ok\n");
	return 0;
}
