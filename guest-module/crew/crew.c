// SPDX-License-Identifier: GPL-2.0
/*
 * crew.c - byte-granular CREW ownership: slow path, reset, external writer,
 * record format, log ring and replay.  See crew.h for the algorithm and the
 * holes it closes.  No libc or kernel header here: crew_port.h only.
 */
#include "crew.h"

#define CREW_DEADLOCK_CHECK	1023	/* spins between cycle checks */
#define CREW_DEADLOCK_CONFIRM	64	/* consecutive cycle sightings */

const char *crew_strerror(int err)
{
	switch (err < 0 ? -err : err) {
	case 0: return "ok";
	case CREW_EINVAL: return "invalid argument";
	case CREW_ENOSPC: return "log sink full";
	case CREW_EBADREC: return "malformed or inconsistent record";
	case CREW_ETRUNC: return "log truncated (no END record)";
	case CREW_ENEVER: return "waiting for a seq that a finished vCPU never reached";
	case CREW_EDEADLOCK: return "replay waits form a cycle";
	case CREW_EMISMATCH: return "access count differs from the recording";
	case CREW_EFENCE: return "remote fence failed";
	case CREW_EPROTO: return "ring consumer broke the protocol";
	case CREW_ESITE: return "the access at a logged seq is at another pc or address";
	case CREW_ELIVELOCK: return "a take of several ranges kept losing one of them";
	}
	return "unknown error";
}

/* ---------------------------------------------------------------- records */

static u8 crew_rec_sum(const struct crew_rec *r)
{
	const u8 *b = (const u8 *)r;
	unsigned int i;
	u8 s = 0;

	for (i = 0; i < sizeof(*r); i++)
		s += b[i];
	return s;
}

void crew_rec_seal(struct crew_rec *r)
{
	r->csum = 0;
	r->csum = (u8)(CREW_REC_CSUM - crew_rec_sum(r));
}

/* everything a reader must know before trusting a record */
int crew_rec_check(const struct crew_rec *r, unsigned int nr_cpus)
{
	unsigned int i, n = r->n_owners, id, prev = 0;

	if (crew_le16_to_cpu(r->magic) != CREW_REC_MAGIC ||
	    r->version != CREW_REC_VERSION || crew_rec_sum(r) != CREW_REC_CSUM)
		return -CREW_EBADREC;
	if (nr_cpus > CREW_MAX_CPUS || r->acq_id >= nr_cpus ||
	    crew_rec_acq_seq(r) > CREW_SEQ_MASK)
		return -CREW_EBADREC;
	if (r->type == CREW_REC_END || r->type == CREW_REC_MARK) {
		if (n || r->flags)
			return -CREW_EBADREC;
		if ((r->type == CREW_REC_MARK && r->owner[0]) || r->site_pc || r->site_range)
			return -CREW_EBADREC;
		for (i = 1; i < CREW_REC_OWNERS; i++)
			if (r->owner[i])
				return -CREW_EBADREC;
		return 0;
	}
	if (r->type != CREW_REC_TRANSFER || n == 0 || n > CREW_REC_OWNERS ||
	    (r->flags & ~(CREW_REC_WRITE | CREW_REC_MORE | CREW_REC_EXT)))
		return -CREW_EBADREC;
	if ((r->flags & CREW_REC_MORE) && n != CREW_REC_OWNERS)
		return -CREW_EBADREC;
	for (i = 0; i < CREW_REC_OWNERS; i++) {
		if (i >= n) {
			if (r->owner[i])
				return -CREW_EBADREC;
			continue;
		}
		id = crew_rec_owner_id(r, i);
		if (id >= nr_cpus || id == r->acq_id || (i && id <= prev))
			return -CREW_EBADREC;
		prev = id;
	}
	return 0;
}

/* ------------------------------------------------------------------- ring */

int crew_ring_init(struct crew_ring *r, struct crew_ring_shared *sh, u32 nr)
{
	if (!nr || (nr & (nr - 1)))
		return -CREW_EINVAL;
	r->sh = sh;
	r->nr = nr;
	r->head = 0;
	r->full = 0;		/* the caller may set full/priv afterwards */
	r->priv = 0;
	sh->nr = nr;
	crew_store(&sh->tail, 0);
	crew_store_release(&sh->head, 0);
	return 0;
}

int crew_ring_emit(void *ring, const struct crew_rec *rec)
{
	struct crew_ring *r = ring;
	u64 tail = crew_load_acquire(&r->sh->tail);
	struct crew_rec *dst;

	for (;;) {
		if (tail > r->head)		/* the host cannot be ahead */
			return -CREW_EPROTO;
		if (r->head - tail < r->nr)
			break;
		if (!r->full || r->full(r))
			return -CREW_ENOSPC;
		tail = crew_load_acquire(&r->sh->tail);
	}
	dst = &r->sh->rec[r->head & (r->nr - 1)];
	*dst = *rec;
	r->head++;
	crew_store_release(&r->sh->head, r->head);
	return 0;
}

/* host side: nr and tail are the consumer's own, head is untrusted */
int crew_ring_consume(struct crew_ring_shared *sh, u32 nr, u64 *tail,
		      struct crew_rec *out)
{
	u64 head = crew_load_acquire(&sh->head);

	if (head == *tail)
		return 0;
	if (head < *tail || head - *tail > nr)
		return -CREW_EPROTO;
	*out = sh->rec[*tail & (nr - 1)];	/* copy, then validate the copy */
	(*tail)++;
	crew_store_release(&sh->tail, *tail);
	return 1;
}

/* -------------------------------------------------------------- setup */

#ifndef __KERNEL__
static int crew_user_remote_fence(struct crew_dom *d, u32 mask)
{
	(void)d;
	(void)mask;
	return crew_port_membarrier();
}
#endif

int crew_dom_init(struct crew_dom *d, unsigned int nr_cpus, long shadow_off,
		  int tso)
{
	unsigned int i;

	if (!nr_cpus || nr_cpus > CREW_MAX_CPUS || tso < 0 || tso >= CREW_TSO_NR)
		return -CREW_EINVAL;
	d->nr_cpus = nr_cpus;
	d->tso = tso;
	d->shadow_off = shadow_off;
	d->remote_fence = 0;	/* kernel: the caller installs one (IPI, hypercall) */
	d->rp_multi = 0;
#ifndef __KERNEL__
	if (tso == CREW_TSO_MEMBARRIER) {
		if (crew_port_membarrier_register())
			return -CREW_EFENCE;
		d->remote_fence = crew_user_remote_fence;
	}
#endif
	for (i = 0; i < CREW_MAX_CPUS; i++)
		d->cpu[i] = 0;
	for (i = 0; i < CREW_NLOCKS; i++)
		d->lock[i] = 0;
	d->pgen = 0;
	d->pbase = d->npages = 0;
	d->pshift = 0;
	return 0;
}

void crew_dom_pages(struct crew_dom *d, u32 *gen, unsigned long base,
		    unsigned long npages, unsigned int shift)
{
	d->pbase = base;
	d->npages = npages;
	d->pshift = shift;
	crew_store_release(&d->pgen, gen);
}

void crew_cpu_vcache(struct crew_cpu *c, struct crew_vcache *vc)
{
	c->vc = vc;
}

/* after a change of the shadow of [p, p + len): bump its pages */
static void crew_bump_pages(struct crew_dom *d, unsigned long p, unsigned long len)
{
	unsigned long pg, last;

#ifdef CREW_BROKEN_PGEN
	return;		/* deliberately broken: remembered pages never go stale */
#endif
	if (!d->pgen || p + len <= d->pbase)
		return;
	pg = p < d->pbase ? 0 : (p - d->pbase) >> d->pshift;
	last = (p + len - 1 - d->pbase) >> d->pshift;
	for (; pg <= last && pg < d->npages; pg++)
		(void)__atomic_fetch_add(&d->pgen[pg], 1, __ATOMIC_SEQ_CST);
}

int crew_cpu_init(struct crew_dom *d, struct crew_cpu *c, unsigned int id,
		  crew_emit_fn emit, void *emit_priv)
{
	unsigned long i;
	u8 *b = (u8 *)c;

	if (id >= d->nr_cpus || d->cpu[id])
		return -CREW_EINVAL;
	for (i = 0; i < sizeof(*c); i++)
		b[i] = 0;
	c->dom = d;
	c->id = id;
	c->mask = 1u << id;
	c->rep = 0x0101010101010101ull * c->mask;
	c->shadow_off = d->shadow_off;
	c->fenced_release = d->tso == CREW_TSO_FENCED_RELEASE;
	c->emit = emit;
	c->emit_priv = emit_priv;
	c->state = CREW_BLOCKED;
	crew_store_release(&d->cpu[id], c);
	return 0;
}

void crew_finish(struct crew_cpu *c)
{
	crew_store_release(&c->state, CREW_FINISHED);
}

int crew_record_finish(struct crew_cpu *c)
{
	struct crew_rec r = { 0 };
	int ret = 0;

	r.magic = crew_cpu_to_le16(CREW_REC_MAGIC);
	r.version = CREW_REC_VERSION;
	r.type = CREW_REC_END;
	r.acq_id = c->id;
	r.acq_seq = crew_cpu_to_le64(crew_load(&c->seq) & CREW_SEQ_MASK);
	r.owner[0] = crew_cpu_to_le64(c->nrec);
	crew_rec_seal(&r);
	if (c->emit)
		ret = c->emit(c->emit_priv, &r);
	crew_finish(c);
	return ret;
}

/* ------------------------------------------------------ slow-path locks */

static unsigned int crew_lock_idx(unsigned long granule)
{
	return (unsigned int)((granule * 0x9e3779b97f4a7c15ull) >>
			      (64 - CREW_LOCK_BITS));
}

/* sorted, unique lock indexes of [p, p + len) into c->lk; returns count */
static int crew_collect_locks(struct crew_cpu *c, unsigned long p,
			      unsigned long len)
{
	unsigned long g, g0 = p >> CREW_LOCK_SHIFT;
	unsigned long g1 = (p + len - 1) >> CREW_LOCK_SHIFT;
	int n = 0, i, j;
	u16 x;

	for (g = g0; g <= g1; g++) {
		x = (u16)crew_lock_idx(g);
		for (i = n; i > 0 && c->lk[i - 1] > x; i--)
			;
		if (i > 0 && c->lk[i - 1] == x)
			continue;
		for (j = n; j > i; j--)
			c->lk[j] = c->lk[j - 1];
		c->lk[i] = x;
		n++;
	}
	return n;
}

static void crew_spin_lock(u32 *l)
{
	unsigned long spins = 0;

	while (crew_xchg(l, 1)) {
		while (crew_load(l)) {
			crew_cpu_relax();
			crew_port_spin_wait(-1, 0, false, ++spins);
		}
	}
}

static void crew_spin_unlock(u32 *l)
{
	crew_store_release(l, 0);
}

/* ------------------------------------------------------------ slow path */

/*
 * Wait until no vCPU in others has an access in flight that it started
 * under its old ownership (hole 1), then snapshot their seqs into c->snap.
 */
static int crew_wait_owners(struct crew_cpu *c, u32 others)
{
	struct crew_dom *d = c->dom;
	struct crew_cpu *o;
	u32 pend = 0, bit;
	unsigned long spins = 0;
	unsigned int id, need = 1;
	u64 s;
	int ret = 0;

	for (id = 0; id < CREW_MAX_CPUS; id++) {
		if (!(others & (1u << id)))
			continue;
		o = crew_load_acquire(&d->cpu[id]);
		if (!o) {
			ret = -CREW_EINVAL;	/* shadow names an unknown vCPU */
			continue;
		}
		if (crew_load_acquire(&o->state) == CREW_ACTIVE)
			pend |= 1u << id;
	}
#ifdef CREW_BROKEN_TSO
	pend = 0;	/* deliberately broken: trust whatever seq we read now */
#endif
	if (pend) {
		switch (d->tso) {
		case CREW_TSO_MEMBARRIER:
			c->st.fences++;
			if (!d->remote_fence || d->remote_fence(d, pend))
				ret = -CREW_EFENCE;	/* still wait: best effort */
			break;
		case CREW_TSO_TWICE:
			need = 2;
			break;
		default:
			break;
		}
		for (id = 0; id < CREW_MAX_CPUS; id++) {
			if (pend & (1u << id)) {
				c->snap[id] = crew_load_acquire(&d->cpu[id]->seq);
				c->chg[id] = 0;
			}
		}
		while (pend) {
			for (id = 0; id < CREW_MAX_CPUS; id++) {
				bit = 1u << id;
				if (!(pend & bit))
					continue;
				o = d->cpu[id];
				if (crew_load_acquire(&o->state) != CREW_ACTIVE) {
					pend &= ~bit;
					continue;
				}
				s = crew_load_acquire(&o->seq);
				if (s != c->snap[id]) {
					c->snap[id] = s;
					if (++c->chg[id] >= need)
						pend &= ~bit;
				}
			}
			if (pend) {
				id = __builtin_ctz(pend);
				crew_cpu_relax();
				crew_port_spin_wait(id, c->snap[id], true, ++spins);
			}
		}
		c->st.wait_spins += spins;
	}
	/* what is logged: a value read after the wait (all before it is done) */
	for (id = 0; id < CREW_MAX_CPUS; id++) {
		if ((others & (1u << id)) && d->cpu[id])
			c->snap[id] = crew_load_acquire(&d->cpu[id]->seq);
	}
	return ret;
}

static int crew_log_transfer(struct crew_cpu *c, u32 others, int flags,
			     unsigned long p, unsigned long len)
{
	struct crew_rec r;
	unsigned int id, n;
	int ret;

	while (others) {
		r = (struct crew_rec){ 0 };
		r.magic = crew_cpu_to_le16(CREW_REC_MAGIC);
		r.version = CREW_REC_VERSION;
		r.type = CREW_REC_TRANSFER;
		r.acq_id = c->id;
		r.flags = flags;
		r.acq_seq = crew_cpu_to_le64(crew_load(&c->seq) & CREW_SEQ_MASK);
		r.site_pc = crew_cpu_to_le64(c->site_pc);
		r.site_range = crew_cpu_to_le64(((u64)p & CREW_SITE_ADDR_MASK) |
						(u64)(len - 1) << CREW_SITE_ADDR_BITS);
		for (n = 0, id = 0; id < CREW_MAX_CPUS && n < CREW_REC_OWNERS; id++) {
			if (!(others & (1u << id)))
				continue;
			others &= ~(1u << id);
			r.owner[n++] = crew_cpu_to_le64((u64)id << CREW_SEQ_BITS |
							(c->snap[id] & CREW_SEQ_MASK));
		}
		r.n_owners = n;
		if (others)
			r.flags |= CREW_REC_MORE;
		crew_rec_seal(&r);
		ret = c->emit ? c->emit(c->emit_priv, &r) : 0;
		if (ret)
			return ret;
		c->st.records++;
		c->nrec++;
	}
	return 0;
}

static int crew_acquire(struct crew_cpu *c, const void *p, unsigned long len,
			int write, int flags)
{
	struct crew_dom *d = c->dom;
	volatile u8 *s = (volatile u8 *)crew_shadow(c, p);
	unsigned long i, irqf = 0;
	u32 others = 0;
	u64 wold, wnv, wothers = 0;
	u8 old, nv;
	int nl, k, ret = 0, changed = 0;

	if (!len || len > CREW_RANGE_MAX)
		return -CREW_EINVAL;
	crew_irq_save(irqf);
	c->st.slow++;
	crew_block(c);					/* hole 3 */
	nl = crew_collect_locks(c, (unsigned long)p, len);
	for (k = 0; k < nl; k++)			/* hole 2 */
		crew_spin_lock(&d->lock[c->lk[k]]);

	/*
	 * invalidate: the final owner sets, published at once; eight bytes
	 * at a time where aligned (an aligned word lies in one lock granule,
	 * all of them held, so rewriting its unchanged bytes races nothing)
	 */
	for (i = 0; i < len; i++) {
		if (!((unsigned long)(s + i) & 7) && len - i >= 8) {
			wold = crew_ld_u64(s + i);
			wothers |= wold;
			wnv = write ? c->rep : wold | c->rep;
			if (wnv != wold) {
				crew_st_u64(s + i, wnv);
				changed = 1;
			}
			i += 7;
			continue;
		}
		old = s[i];
		others |= old;
		nv = write ? c->mask : (u8)(old | c->mask);
		if (nv != old) {
			s[i] = nv;
			changed = 1;
		}
	}
	for (; wothers; wothers >>= 8)
		others |= (u8)wothers;
	if (changed)
		crew_bump_pages(d, (unsigned long)p, len);	/* a full fence */
	others &= ~(u32)c->mask;
	if (others) {
		crew_fence();		/* invalidation before reading owners */
		c->st.transfers++;
		ret = crew_wait_owners(c, others);	/* hole 1 */
		k = crew_log_transfer(c, others,
				      flags | (write ? CREW_REC_WRITE : 0),
				      (unsigned long)p, len);
		if (k)
			ret = k;
	}
	crew_unblock(c);	/* locked: ACTIVE is visible before the unlock */
	for (k = nl - 1; k >= 0; k--)
		crew_spin_unlock(&d->lock[c->lk[k]]);
	crew_irq_restore(irqf);
	return ret;
}

int crew_acquire_slow(struct crew_cpu *c, const void *p, unsigned long len,
		      int write)
{
	return crew_acquire(c, p, len, write, 0);
}

/* ----------------------------------------------------- reset (hole 4) */

int crew_reset(struct crew_cpu *c, const void *p, unsigned long len)
{
	struct crew_dom *d = c->dom;
	unsigned long a = (unsigned long)p, end = a + len, next, g, irqf = 0;
	volatile u8 *s;
	u32 was = crew_load(&c->state), *l;

	crew_irq_save(irqf);
	crew_block(c);
	while (a < end) {
		next = ((a >> CREW_LOCK_SHIFT) + 1) << CREW_LOCK_SHIFT;
		if (next > end)
			next = end;
		l = &d->lock[crew_lock_idx(a >> CREW_LOCK_SHIFT)];
		crew_spin_lock(l);
		s = (volatile u8 *)crew_shadow(c, (const void *)a);
		for (g = a; g < next; g++, s++)
			*s = 0;
		crew_bump_pages(d, a, next - a);
		a = next;
		crew_spin_unlock(l);
	}
	/* full fence: the reset is visible before anything the caller does next */
	(void)crew_xchg(&c->state, was);
	crew_irq_restore(irqf);
	return 0;
}

/* ---------------------------------------------- external writer (hole 5) */

int crew_ext_begin(struct crew_cpu *host, const void *p, unsigned long len,
		   int write)
{
	unsigned int l = (unsigned int)len;

	crew_unblock(host);	/* ACTIVE before the check (see crew.h) */
	if ((l == 1 || l == 2 || l == 4 || l == 8) && crew_owns(host, p, l, write))
		return 0;
	return crew_acquire(host, p, len, write, CREW_REC_EXT);
}

void crew_ext_end(struct crew_cpu *host)
{
	crew_release_plain(host);
	crew_block(host);
}

/* --------------------------------------------------------------- replay */

static int crew_buf_next(struct crew_reader *r, struct crew_rec *out)
{
	unsigned long i;
	const u8 *b;
	u8 *o = (u8 *)out;

	if (r->pos >= r->len)
		return 0;
	if (r->len - r->pos < sizeof(*out))
		return -CREW_ETRUNC;
	b = r->buf + r->pos;
	for (i = 0; i < sizeof(*out); i++)
		o[i] = b[i];
	r->pos += sizeof(*out);
	return 1;
}

void crew_buf_reader_init(struct crew_reader *r, const void *buf, unsigned long len)
{
	r->next = crew_buf_next;
	r->priv = 0;
	r->buf = buf;
	r->len = len;
	r->pos = 0;
}

static int crew_replay_fail(struct crew_cpu *c, int err)
{
	if (!c->rp_err)
		c->rp_err = err;
	c->rp_have = 0;
	return c->rp_err;
}

/* read and validate the next record (sets rp_next) */
static int crew_replay_fetch(struct crew_cpu *c)
{
	struct crew_rec *r = &c->rp_rec;
	struct crew_dom *d = c->dom;
	unsigned int i;
	u64 seq;
	int ret;

	c->rp_have = 0;
	ret = c->rd->next(c->rd, r);
	if (ret == 0)
		return crew_replay_fail(c, -CREW_ETRUNC);
	if (ret < 0)
		return crew_replay_fail(c, ret);
	if (crew_rec_check(r, d->nr_cpus) || r->acq_id != c->id)
		return crew_replay_fail(c, -CREW_EBADREC);
	seq = crew_rec_acq_seq(r);
	/*
	 * seqs never go back; a MORE record is followed by its continuation;
	 * two TRANSFER records with one seq only with rp_multi (an access
	 * over several ranges, e.g. a string instruction)
	 */
	if (seq < crew_load(&c->seq) || seq < c->rp_last ||
	    (c->rp_last_more && (seq != c->rp_last || r->type != CREW_REC_TRANSFER)) ||
	    (!c->rp_last_more && !c->dom->rp_multi && c->nrec && seq == c->rp_last &&
	     r->type == CREW_REC_TRANSFER))
		return crew_replay_fail(c, -CREW_EBADREC);
	if (r->type == CREW_REC_END) {
		if (seq == CREW_SEQ_MASK) {	/* open end: no count */
			c->rp_ended = 1;
			c->rp_next = seq;
			return 0;
		}
		if (crew_le64_to_cpu(r->owner[0]) != c->nrec)
			return crew_replay_fail(c, -CREW_EBADREC);
		c->rp_ended = 1;
		c->rp_next = seq;
		return 0;
	}
	if (r->type == CREW_REC_MARK) {
		c->rp_last = seq;
		c->rp_last_more = 0;
		c->rp_have = 1;		/* n_owners 0: nothing to wait for */
		c->rp_next = seq;
		return 0;
	}
	for (i = 0; i < r->n_owners; i++)
		if (!crew_load_acquire(&d->cpu[crew_rec_owner_id(r, i)]))
			return crew_replay_fail(c, -CREW_EBADREC);
	c->rp_last = seq;
	c->rp_last_more = !!(r->flags & CREW_REC_MORE);
	c->rp_have = 1;
	c->rp_next = seq;
	return 0;
}

int crew_replay_start(struct crew_cpu *c, struct crew_reader *rd)
{
	c->replaying = 1;
	c->rd = rd;
	c->rp_err = 0;
	c->rp_have = c->rp_ended = c->rp_last_more = 0;
	c->rp_last = 0;
	c->nrec = 0;
	c->rp_next = ~0ull;
	return crew_replay_fetch(c);
}

/* is there a cycle of replay waits through c whose targets are all stuck? */
static bool crew_wait_cycle(struct crew_cpu *c)
{
	struct crew_dom *d = c->dom;
	struct crew_cpu *cur = c, *t;
	unsigned int n, tid;
	u64 w, tv;

	for (n = 0; n <= d->nr_cpus; n++) {
		w = crew_load_acquire(&cur->waitw);
		if (!w)
			return false;
		tid = (unsigned int)(w >> CREW_SEQ_BITS) - 1;
		tv = w & CREW_SEQ_MASK;
		if (tid >= d->nr_cpus)
			return false;
		t = crew_load_acquire(&d->cpu[tid]);
		if (!t || crew_load_acquire(&t->seq) >= tv)
			return false;
		if (t == c)
			return true;
		cur = t;
	}
	return false;
}

static int crew_replay_wait(struct crew_cpu *c, unsigned int id, u64 v)
{
	struct crew_cpu *o = c->dom->cpu[id];
	unsigned long spins = 0;
	unsigned int confirm = 0;
	int ret = 0;

	c->st.replay_waits++;
	if (crew_load_acquire(&o->seq) >= v)
		return 0;
	crew_store_release(&c->waitw, ((u64)id + 1) << CREW_SEQ_BITS | v);
	crew_fence();	/* the wait word is visible before we look at others' */
	for (;;) {
		if (crew_load_acquire(&o->seq) >= v)
			break;
		if (crew_load_acquire(&o->state) == CREW_FINISHED) {
			if (crew_load_acquire(&o->seq) >= v)
				break;
			ret = -CREW_ENEVER;
			break;
		}
		if ((++spins & CREW_DEADLOCK_CHECK) == 0) {
			if (!crew_wait_cycle(c))
				confirm = 0;
			else if (++confirm >= CREW_DEADLOCK_CONFIRM) {
				ret = -CREW_EDEADLOCK;
				break;
			}
		}
		crew_cpu_relax();
		crew_port_spin_wait(id, crew_load(&o->seq), false, spins);
	}
	c->st.replay_spins += spins;
	crew_store_release(&c->waitw, 0);
	return ret;
}

/* does the record due now describe this access? */
static bool crew_site_matches(const struct crew_rec *r, u64 pc,
			      crew_covers_fn covers, void *priv)
{
	if (!pc || !crew_rec_site_pc(r))
		return true;		/* a log or caller without sites */
	if (crew_rec_site_pc(r) != pc)
		return false;
	return !covers || covers(priv, crew_rec_site_addr(r));
}

int crew_replay_slow_at(struct crew_cpu *c, u64 pc, crew_covers_fn covers,
			void *priv, u64 addr)
{
	struct crew_rec *r = &c->rp_rec;
	unsigned int i;
	int ret;

	if (c->rp_err)
		return c->rp_err;
	while (c->rp_have && c->rp_next == crew_load(&c->seq)) {
		if (r->type == CREW_REC_TRANSFER &&
		    !crew_site_matches(r, pc, covers, priv)) {
			c->bad_site[0] = crew_rec_site_pc(r);
			c->bad_site[1] = crew_rec_site_addr(r);
			c->bad_site[2] = pc;
			c->bad_site[3] = addr;
			return crew_replay_fail(c, -CREW_ESITE);
		}
		for (i = 0; i < r->n_owners; i++) {
			ret = crew_replay_wait(c, crew_rec_owner_id(r, i),
					       crew_rec_owner_seq(r, i));
			if (ret)
				return crew_replay_fail(c, ret);
		}
		if (r->type == CREW_REC_TRANSFER)
			c->nrec++;
		ret = crew_replay_fetch(c);
		if (ret)
			return ret;
	}
	if (c->rp_ended && crew_load(&c->seq) >= c->rp_next)
		return crew_replay_fail(c, -CREW_EMISMATCH);
	return 0;
}

int crew_replay_slow(struct crew_cpu *c)
{
	return crew_replay_slow_at(c, 0, NULL, NULL, 0);
}

int crew_replay_finish(struct crew_cpu *c)
{
	int ret = c->rp_err;

	if (!ret && (!c->rp_ended || crew_load(&c->seq) != c->rp_next))
		ret = -CREW_EMISMATCH;
	crew_finish(c);
	return ret;
}

/*
 * Four shadow words per test: a loop over bytes was two thirds of the
 * kernel's instructions in a byte-CREW read loop, one over words still a
 * quarter.  Returns the bits that say "not owned", 0 when all are.
 */
static u64 not_owned_w(const u8 *s, unsigned long n, u64 rep)
{
	unsigned long i;
	u64 x = 0;

	for (i = 0; i < n && !x; i += 32)
		x = (crew_ld_u64(s + i) ^ rep) | (crew_ld_u64(s + i + 8) ^ rep) |
		    (crew_ld_u64(s + i + 16) ^ rep) | (crew_ld_u64(s + i + 24) ^ rep);
	return x;
}

static u64 not_owned_r(const u8 *s, unsigned long n, u64 rep)
{
	unsigned long i;
	u64 x = 0;

	for (i = 0; i < n && !x; i += 32)
		x = (~crew_ld_u64(s + i) | ~crew_ld_u64(s + i + 8) |
		     ~crew_ld_u64(s + i + 16) | ~crew_ld_u64(s + i + 24)) & rep;
	return x;
}

/* bytes [lo, hi) of a little-endian word, lo < hi <= 8 */
static inline u64 byte_mask(unsigned int lo, unsigned int hi)
{
	u64 m = hi >= 8 ? ~0ULL : (1ULL << (hi * 8)) - 1;

	return m & ~((1ULL << (lo * 8)) - 1);
}

/* the bytes @m of the aligned word at @w are owned (bytes outside: any) */
static inline bool word_owned(const u8 *w, u64 m, u64 rep, bool write)
{
	u64 v = crew_ld_u64(w);

	return !((write ? v ^ rep : ~v & rep) & m);
}

/*
 * The unaligned head and the tail are whole aligned words too, with the
 * bytes outside the range masked off: byte loops there were most of this
 * function's instructions for the short ranges of string instructions
 * (memcpy/memset of a few dozen bytes).  An aligned word never crosses a
 * page, so the shadow bytes read beside the range exist.
 */
bool crew_owns_range(const u8 *s, unsigned long len, u8 mask, bool write)
{
	u64 rep = 0x0101010101010101ULL * mask;
	unsigned int head = (unsigned long)s & 7;
	unsigned long n;

	if (!len)
		return true;
	if (head) {
		n = len < 8 - head ? len : 8 - head;
		if (!word_owned(s - head, byte_mask(head, head + n), rep, write))
			return false;
		s += n;
		len -= n;
	}
	n = len & ~31UL;
	if (n && (write ? not_owned_w(s, n, rep) : not_owned_r(s, n, rep)))
		return false;
	s += n;
	len -= n;
	for (; len >= 8; s += 8, len -= 8)
		if (!word_owned(s, ~0ULL, rep, write))
			return false;
	return !len || word_owned(s, byte_mask(0, len), rep, write);
}

/*
 * The generation is read before the pass: a change the pass missed comes
 * with a bump after it (crew_acquire), which the next look sees.
 */
bool crew_owns_span(struct crew_cpu *c, const void *p, unsigned long len,
		    bool write)
{
	struct crew_dom *d = c->dom;
	struct crew_vcache *vc = c->vc;
	unsigned long a = (unsigned long)p, pg = 0, slot = 0;
	u32 *pgen = crew_load_acquire(&d->pgen), g = 0;
	bool remember = false, owned;

	if (pgen && vc && len && a >= d->pbase) {
		pg = (a - d->pbase) >> d->pshift;
		if (pg < d->npages && (a + len - 1 - d->pbase) >> d->pshift == pg) {
			slot = pg & (CREW_VC_SIZE - 1);
			g = crew_load_acquire(&pgen[pg]);
			if (vc->page[slot] == pg + 1 && vc->gen[slot] == g &&
			    (vc->write[slot] || !write)) {
				c->st.vc_hits++;
				return true;
			}
			/* only whole pages are remembered */
			remember = len == 1UL << d->pshift;
		}
	}
	owned = crew_owns_range(crew_shadow(c, p), len, c->mask, write);
	if (owned && remember) {
		vc->page[slot] = (u32)pg + 1;
		vc->gen[slot] = g;
		vc->write[slot] = write;
	}
	return owned;
}
