/* SPDX-License-Identifier: GPL-2.0 */
/*
 * crew.h - byte-granular CREW (concurrent read, exclusive write) ownership
 * for multiprocessor record/replay (thesis section 4.2.3-4.2.6, Fig. 4.3-4.7).
 * Portable core: the same crew.c builds in the guest kernel module and in
 * the userspace litmus tests (test_crew.c); crew_port.h is the only
 * environment-specific part.
 *
 * Model.  Every instrumented access to shared memory is bracketed:
 *
 *	record:	crew_{read,write}_acquire(c, p, len); ACCESS; crew_release(c);
 *	replay:	crew_replay_begin(c);                 ACCESS; crew_replay_end(c);
 *
 * Each data byte has one shadow byte at p + shadow_off: a bitmap of its
 * owners, one bit per vCPU.  0 means "nobody owns it" (fresh or reset
 * memory) and fails both fast paths.  Fast path (inline, no locked
 * instruction, no fence): a read needs (owners & me) == me, a write
 * needs owners == me (for all len bytes, len = 1, 2, 4 or 8).  Release
 * increments the vCPU's sequence number c->seq (the count of its
 * instrumented accesses, plus crew_tick()s).  The slow path
 * (crew_acquire_slow, out of line) transfers ownership:
 *
 *  1. state = BLOCKED (release store);
 *  2. take the slow-path spinlocks of the range (hashed table, see hole 2),
 *     in ascending order;
 *  3. "invalidate": every shadow byte becomes its final value at once
 *     (write: me; read: old | me), the union of the old values minus me is
 *     the set of previous owners; then a full fence.  (The acquirer shows
 *     as an owner before it may access, which is harmless: the lock keeps
 *     other transfers of these bytes out and the acquirer is BLOCKED, so
 *     a transfer of other bytes it owns does not wait for it.  It removes
 *     the second pass and any "locked" value from the shadow);
 *  4. wait until every previous owner has finished any access it started
 *     under its old ownership (hole 1);
 *  5. log one transfer record (acquirer id, acquirer seq, and (id, seq) of
 *     every previous owner, the seq read after the wait); no previous owner
 *     (byte owned by nobody): no record;
 *  6. state = ACTIVE with a locked xchg (full fence), unlock, return.
 *
 * Replay (Fig. 4.7): the per-vCPU reader holds the next record; when the
 * vCPU's seq equals the record's acquirer seq, crew_replay_begin waits until
 * every listed owner's seq has reached the logged value.  What a record
 * promises: every access of the owner with index < logged seq completed
 * before the acquirer's access; its later accesses to these bytes came
 * after (they had to take the slow path, which the lock serialises after
 * this one).  All waits are for values that were observed in real time
 * before the acquirer's access, so a replay of a genuine log cannot
 * deadlock.
 *
 * Holes in the thesis algorithm and how they are closed here:
 *
 *  1. x86-TSO store->load reordering.  An owner's fast-path check (a load)
 *     may be performed before its previous seq++ store leaves the store
 *     buffer; the acquirer then reads an old seq while the owner is inside
 *     an access it is entitled to.  The thesis' fix (Fig. 4.6, "wait for
 *     two changes") is wrong in principle: a store buffer holds many seq
 *     stores, any number of later checks can be performed before they
 *     drain, and seeing two of them land says nothing about which checks
 *     came after the invalidation.  It is evaluated as CREW_TSO_TWICE
 *     (and the single change as CREW_TSO_ONCE) by the litmus tests.  Two
 *     correct modes are provided:
 *     CREW_TSO_MEMBARRIER (default in userspace): after the invalidation the
 *       acquirer runs an asymmetric fence on the owners (membarrier() in
 *       userspace; in a guest it would be an IPI or a hypervisor kick: a
 *       VM exit is serialising).  Each owner thereby executes a full
 *       barrier at some instruction boundary P after the invalidation:
 *       accesses whose seq++ precedes P are visible, checks after P see
 *       the invalidation, and at most the one access straddling P is still
 *       in flight; the acquirer reads seq after the fence and waits for one
 *       change (or BLOCKED).  The fast path stays fence-free.
 *     CREW_TSO_FENCED_RELEASE (default in the kernel until the guest has a
 *       remote-fence hook): crew_release() is a locked xchg, so an owner's
 *       checks cannot pass its previous seq++; the access in flight at the
 *       invalidation is the one numbered by the current seq: one change
 *       after the invalidation (or BLOCKED) finishes it.  Costs a locked
 *       instruction per access (numbers in README.md).
 *     BLOCKED is safe to trust in every mode: block is a release store
 *     made after the vCPU's last access, unblock is a locked xchg, so a
 *     vCPU seen BLOCKED after the invalidation has no access in flight and
 *     performs its next checks after the invalidation.
 *     -DCREW_BROKEN_TSO removes the wait altogether (logs the seq read right
 *     after the invalidation, like Fig. 4.4 without its big-reader lock):
 *     the litmus tests must and do catch it.
 *  2. The lock of the slow path.  The thesis locks a byte by xchg'ing 0 into
 *     its owner bitmap, so "locked" and "owned by nobody" are the same
 *     value.  Here the owner bitmap is never a lock: a separate table of
 *     1 << CREW_LOCK_BITS spinlocks, hashed by 64-byte granule, serialises
 *     the slow paths (and resets) of a byte; 0 only means nobody.
 *  3. Two slow paths waiting for each other.  A vCPU is BLOCKED for its
 *     whole slow path (including while spinning on the locks and waiting
 *     for owners), and an acquirer does not wait for a BLOCKED owner.  A
 *     lock holder only waits for ACTIVE vCPUs, ACTIVE vCPUs never wait for
 *     locks, locks are taken in ascending order: no cycle.  Anything else
 *     that may block (halt, user mode, a long uninstrumented loop) must be
 *     bracketed by crew_block()/crew_unblock() or keep calling crew_tick().
 *  4. Reset (memory freed or reused): crew_reset() sets the shadow of a
 *     range to 0 under the slow-path locks of its granules (so it cannot
 *     interleave with a transfer of those bytes), while BLOCKED (lock
 *     waits), and before the caller's next store (TSO store order; the
 *     final unblock is a full fence), i.e. before the memory can be handed
 *     to another vCPU.  The first access after a reset takes the slow path
 *     without waiting or logging: it is ordered after the earlier users of
 *     the memory by the synchronisation that freed and reallocated it
 *     (itself instrumented); a use-after-free race is not ordered.
 *  5. External writers (QEMU/DMA writing guest RAM): the pseudo-vCPU
 *     CREW_EXT_ID (7) takes part like a vCPU: crew_ext_begin(host, p, len)
 *     acquires the range through the same slow path (waits for the vCPUs
 *     that own it, logs a record with CREW_REC_EXT), the host writes,
 *     crew_ext_end() releases and makes it BLOCKED again, so vCPUs taking
 *     the bytes back never wait for it.  In replay the host brackets the
 *     same writes with crew_replay_begin()/crew_replay_end().
 *
 * Requirements on the user: an instrumented access is never interrupted by
 * code that performs instrumented accesses on the same vCPU or migrates
 * it (interrupts are delivered at deterministic points, thesis 4.2.7);
 * crew_acquire_slow runs with interrupts disabled in the kernel.
 *
 * More than 8 vCPUs: the shadow byte becomes a wider word (u16 for 16 vCPUs:
 * 2 shadow bytes per data byte, shadow address = shadow_base + 2 * offset,
 * the fast path loads 2 * len bytes and compares with the replicated
 * 16-bit mask; u32 for 32).  Only the shadow type, crew_owns() and the
 * loops over shadow bytes in crew.c change; records already carry 8-bit ids
 * and split owners over several records (CREW_REC_MORE).
 */
#ifndef CREW_H
#define CREW_H

#include "crew_port.h"

#define CREW_MAX_CPUS	8			/* one bit each in a shadow byte */
#define CREW_EXT_ID	(CREW_MAX_CPUS - 1)	/* device/host pseudo-vCPU */
#define CREW_RANGE_MAX	4096			/* bytes per acquire/ext access */
#define CREW_LOCK_SHIFT	6			/* lock granule: 64 bytes */
#define CREW_LOCK_BITS	10			/* 1024 slow-path spinlocks */
#define CREW_NLOCKS	(1u << CREW_LOCK_BITS)
#define CREW_MAX_RANGE_LOCKS ((CREW_RANGE_MAX >> CREW_LOCK_SHIFT) + 1)
#define CREW_SEQ_BITS	56
#define CREW_SEQ_MASK	((1ull << CREW_SEQ_BITS) - 1)

/* CREW_HOST_BLOCKED: written by the host only (rvg_abi.h), read as blocked */
enum crew_state { CREW_ACTIVE = 0, CREW_BLOCKED = 1, CREW_FINISHED = 2, CREW_HOST_BLOCKED = 3 };

enum crew_tso {
	CREW_TSO_MEMBARRIER = 0,	/* plain release, remote fence + 1 change */
	CREW_TSO_FENCED_RELEASE,	/* locked release, 1 change */
	CREW_TSO_TWICE,			/* thesis Fig. 4.6: 2 changes (evaluated) */
	CREW_TSO_ONCE,			/* 1 change, plain release (evaluated) */
	CREW_TSO_NR
};

#ifdef __KERNEL__	/* until the guest has a remote fence (IPI, hypercall) */
#define CREW_TSO_DEFAULT	CREW_TSO_FENCED_RELEASE
#else			/* membarrier(2), installed by crew_dom_init */
#define CREW_TSO_DEFAULT	CREW_TSO_MEMBARRIER
#endif

/* errors, returned negated */
enum {
	CREW_EINVAL = 1,	/* bad argument (length, id, mode) */
	CREW_ENOSPC,		/* log sink full */
	CREW_EBADREC,		/* malformed or inconsistent record */
	CREW_ETRUNC,		/* log ends without an END record */
	CREW_ENEVER,		/* waiting for a seq a finished vCPU never reached */
	CREW_EDEADLOCK,		/* replay waits form a cycle */
	CREW_EMISMATCH,		/* more/fewer accesses than recorded */
	CREW_EFENCE,		/* remote fence failed or is missing */
	CREW_EPROTO,		/* the ring's consumer broke the protocol */
	CREW_ESITE,		/* replay: the access at a logged seq is at
				 * another pc or address (another path) */
	CREW_ELIVELOCK,		/* a caller's take of several ranges kept
				 * losing one of them (not the core's) */
};
const char *crew_strerror(int err);

/*
 * Transfer record: 64 bytes, little endian, written into memory that an
 * untrusted host reads (validate with crew_rec_check()).
 *
 *   0  le16 magic = CREW_REC_MAGIC
 *   2  u8   version = CREW_REC_VERSION
 *   3  u8   type: CREW_REC_TRANSFER, CREW_REC_END, or CREW_REC_MARK (a
 *           replay host's "no transfer of this vCPU before acq seq": the
 *           replay reads on when it gets there; no owners)
 *   4  u8   acquirer id
 *   5  u8   number of owners n (0..4; 0 only in END and MARK)
 *   6  u8   flags: CREW_REC_WRITE, CREW_REC_MORE (the next record belongs
 *           to the same access: more than 4 owners), CREW_REC_EXT
 *   7  u8   checksum: the 64 bytes sum to CREW_REC_CSUM (mod 256)
 *   8  le64 acquirer seq (the index of the acquiring access); END: the
 *           vCPU's final seq, or CREW_SEQ_MASK for an open end (a replay
 *           host that has no more records: no count to check)
 *  16  le64 site pc: where the acquiring access is (crew_cpu.site_pc;
 *           0 = not known, e.g. the external writer); 0 in END and MARK
 *  24  le64 site range: first byte taken (bits 0-51, the address the
 *           core was given) | (length - 1) << 52; 0 in END and MARK
 *  32  le64 owner[4]: id << 56 | seq, ascending ids, unused entries 0;
 *           END: owner[0] = number of TRANSFER records before it
 *
 * A replay checks the site of every record against the access it meets at
 * that seq (crew_replay_slow_at): a path that left the recording's is
 * reported there (CREW_ESITE), not at the next event the host checks.
 */
#define CREW_REC_MAGIC		0xc7e3
#define CREW_REC_VERSION	2
#define CREW_REC_CSUM		0xa5
#define CREW_REC_TRANSFER	1
#define CREW_REC_END		2
#define CREW_REC_MARK		3	/* replay, from the host: nothing before seq */
#define CREW_REC_WRITE		0x01
#define CREW_REC_MORE		0x02
#define CREW_REC_EXT		0x04
#define CREW_REC_OWNERS		4
#define CREW_SITE_ADDR_BITS	52
#define CREW_SITE_ADDR_MASK	((1ull << CREW_SITE_ADDR_BITS) - 1)

struct crew_rec {
	u16 magic;
	u8 version;
	u8 type;
	u8 acq_id;
	u8 n_owners;
	u8 flags;
	u8 csum;
	u64 acq_seq;
	u64 site_pc;
	u64 site_range;
	u64 owner[CREW_REC_OWNERS];
};

void crew_rec_seal(struct crew_rec *r);
int crew_rec_check(const struct crew_rec *r, unsigned int nr_cpus);
static inline unsigned int crew_rec_owner_id(const struct crew_rec *r, int i)
{
	return (unsigned int)(crew_le64_to_cpu(r->owner[i]) >> CREW_SEQ_BITS);
}
static inline u64 crew_rec_owner_seq(const struct crew_rec *r, int i)
{
	return crew_le64_to_cpu(r->owner[i]) & CREW_SEQ_MASK;
}
static inline u64 crew_rec_acq_seq(const struct crew_rec *r)
{
	return crew_le64_to_cpu(r->acq_seq);
}
static inline u64 crew_rec_site_pc(const struct crew_rec *r)
{
	return crew_le64_to_cpu(r->site_pc);
}
static inline u64 crew_rec_site_addr(const struct crew_rec *r)
{
	return crew_le64_to_cpu(r->site_range) & CREW_SITE_ADDR_MASK;
}
static inline unsigned long crew_rec_site_len(const struct crew_rec *r)
{
	return (unsigned long)(crew_le64_to_cpu(r->site_range) >> CREW_SITE_ADDR_BITS) + 1;
}

/* log sink: 0 or -CREW_E*; one call per record */
typedef int (*crew_emit_fn)(void *priv, const struct crew_rec *rec);

/*
 * Per-vCPU ring in memory shared with the host.  The producer (guest) keeps
 * its own head and never trusts what it reads back except the consumer's
 * tail, which it validates.  full() is called when the ring is full
 * (e.g. a hypercall that makes the host drain it): 0 = try again.
 */
struct crew_ring_shared {
	u64 head;		/* records produced (guest writes) */
	u64 tail;		/* records consumed (host writes) */
	u32 nr;			/* power of two */
	u32 pad[11];
	struct crew_rec rec[];
};

struct crew_ring {
	struct crew_ring_shared *sh;
	u64 head;
	u32 nr;
	int (*full)(struct crew_ring *r);
	void *priv;
};
int crew_ring_init(struct crew_ring *r, struct crew_ring_shared *sh, u32 nr);
int crew_ring_emit(void *ring, const struct crew_rec *rec);	/* crew_emit_fn */
/* consumer side: 1 = got a record, 0 = empty, <0 error */
int crew_ring_consume(struct crew_ring_shared *sh, u32 nr, u64 *tail,
		      struct crew_rec *out);

/* replay reader: 1 = record, 0 = end of data, <0 error */
struct crew_reader {
	int (*next)(struct crew_reader *r, struct crew_rec *out);
	void *priv;
	const u8 *buf;
	unsigned long len, pos;
};
void crew_buf_reader_init(struct crew_reader *r, const void *buf, unsigned long len);

struct crew_cpu;

struct crew_dom {
	unsigned int nr_cpus;		/* ids 0 .. nr_cpus - 1 */
	int tso;			/* enum crew_tso */
	long shadow_off;		/* shadow(p) = p + shadow_off */
	/* asymmetric fence on the vCPUs in mask (CREW_TSO_MEMBARRIER) */
	int (*remote_fence)(struct crew_dom *d, u32 mask);
	struct crew_cpu *cpu[CREW_MAX_CPUS];
	int rp_multi;			/* replay: several records per seq allowed */
	/* optional page generations (crew_dom_pages) */
	u32 *pgen;
	unsigned long pbase, npages;
	unsigned int pshift;
	u32 lock[CREW_NLOCKS] crew_aligned(64);
};

/*
 * Page verifications.  Checking a page-long range (a string instruction
 * copying a page) costs a pass over a page of shadow; most find what they
 * found last time.  So with crew_dom_pages() every shadow change bumps
 * its page's generation (atomically, after the change and before the
 * acquirer's fence and wait for the old owners), and a vCPU that verified
 * a whole page remembers the generation it read before the pass: while
 * the generation stays, so does what the pass found.  An access the
 * remembered pass covers then proceeds on one load, in the same place in
 * the TSO argument as the shadow loads it stands for.
 */
#define CREW_VC_SIZE	64		/* remembered pages per vCPU */

struct crew_vcache {
	u32 page[CREW_VC_SIZE];		/* page index + 1, 0: empty */
	u32 gen[CREW_VC_SIZE];
	u8 write[CREW_VC_SIZE];		/* verified for writes (implies reads) */
};

struct crew_stats {
	u64 slow;		/* slow paths */
	u64 transfers;		/* slow paths that had previous owners */
	u64 records;		/* records emitted */
	u64 fences;		/* remote fences issued */
	u64 wait_spins;		/* spins waiting for owners */
	u64 replay_waits;	/* records waited for in replay */
	u64 replay_spins;
	u64 vc_hits;		/* range checks a remembered page answered */
};

struct crew_cpu {
	/* written by this vCPU, read by the others */
	u64 seq;
	u32 state;
	u32 pad0;
	u64 waitw;		/* replay: (id + 1) << 56 | seq waited for */
	/*
	 * private, but on this line: this vCPU writes it anyway (seq), and
	 * the struct fits the module's 512 bytes
	 */
	u64 site_pc;		/* set by the caller: logged with each transfer */
	u64 bad_site[4];	/* CREW_ESITE: logged pc, addr; found pc, addr */
	/* private to this vCPU */
	long shadow_off;
	u64 rep;		/* mask replicated in every byte */
	u8 id, mask, fenced_release, replaying;
	u32 pad2;
	struct crew_dom *dom;
	crew_emit_fn emit;
	void *emit_priv;
	u64 nrec;		/* TRANSFER records emitted / replayed */
	/* replay */
	struct crew_reader *rd;
	u64 rp_next;		/* seq of the next record (or the END seq) */
	int rp_err;		/* sticky error */
	u8 rp_have, rp_ended;
	struct crew_rec rp_rec;
	u64 rp_last;
	u8 rp_last_more;
	/* slow-path scratch */
	u64 snap[CREW_MAX_CPUS];
	u8 chg[CREW_MAX_CPUS];
	u16 lk[CREW_MAX_RANGE_LOCKS + 1];
	struct crew_stats st;
	struct crew_vcache *vc;	/* page verifications (crew_cpu_vcache) */
} crew_aligned(64);

int crew_dom_init(struct crew_dom *d, unsigned int nr_cpus, long shadow_off,
		  int tso);
/* registers c as vCPU id; it starts BLOCKED: crew_unblock() when it runs */
int crew_cpu_init(struct crew_dom *d, struct crew_cpu *c, unsigned int id,
		  crew_emit_fn emit, void *emit_priv);

int crew_acquire_slow(struct crew_cpu *c, const void *p, unsigned long len,
		      int write);

static crew_inline const u8 *crew_shadow(const struct crew_cpu *c, const void *p)
{
	return (const u8 *)((unsigned long)p + c->shadow_off);
}

static crew_inline bool crew_owns(const struct crew_cpu *c, const void *p,
				  unsigned int len, bool write)
{
	const u8 *s = crew_shadow(c, p);
	u64 v, m;

	switch (len) {
	case 1:
		v = crew_ld_u8(s);
		m = c->mask;
		break;
	case 2:
		v = crew_ld_u16(s);
		m = (u16)c->rep;
		break;
	case 4:
		v = crew_ld_u32(s);
		m = (u32)c->rep;
		break;
	case 8:
		v = crew_ld_u64(s);
		m = c->rep;
		break;
	default:
		return false;
	}
	return write ? v == m : (v & m) == m;
}

/*
 * Whether the vCPU of @mask owns all of @len shadow bytes at @s (a read:
 * its bit is set in each; a write: it is the only owner of each).  For
 * string instructions, whose ranges are up to a page.
 */
bool crew_owns_range(const u8 *s, unsigned long len, u8 mask, bool write);

/*
 * Page generations for the addresses [base, base + npages << shift), @gen
 * zeroed, before any vCPU runs; each vCPU that is to remember pages gets a
 * zeroed crew_vcache.
 */
void crew_dom_pages(struct crew_dom *d, u32 *gen, unsigned long base,
		    unsigned long npages, unsigned int shift);
void crew_cpu_vcache(struct crew_cpu *c, struct crew_vcache *vc);
/* crew_owns_range() of [p, p + len) for vCPU c, remembering whole pages */
bool crew_owns_span(struct crew_cpu *c, const void *p, unsigned long len,
		    bool write);

/* fast paths: 0 or -CREW_E* (the access may proceed even then) */
static crew_inline int crew_read_acquire(struct crew_cpu *c, const void *p,
					 unsigned int len)
{
	if (crew_likely(crew_owns(c, p, len, false))) {
		crew_barrier();	/* the access stays after the check */
		return 0;
	}
	return crew_acquire_slow(c, p, len, 0);
}

static crew_inline int crew_write_acquire(struct crew_cpu *c, const void *p,
					  unsigned int len)
{
	if (crew_likely(crew_owns(c, p, len, true))) {
		crew_barrier();
		return 0;
	}
	return crew_acquire_slow(c, p, len, 1);
}

/* after the access: seq++ (CREW_TSO_FENCED_RELEASE: a locked xchg) */
static crew_inline void crew_release_plain(struct crew_cpu *c)
{
	crew_store_release(&c->seq, crew_load(&c->seq) + 1);
}

static crew_inline void crew_release_fenced(struct crew_cpu *c)
{
	(void)crew_xchg(&c->seq, crew_load(&c->seq) + 1);
}

static crew_inline void crew_release(struct crew_cpu *c)
{
	if (c->fenced_release)
		crew_release_fenced(c);
	else
		crew_release_plain(c);
}

/* progress without a shared access (thesis: basic blocks); same in replay */
#define crew_tick crew_release

/* around anything that may block; not between acquire and release */
static crew_inline void crew_block(struct crew_cpu *c)
{
	crew_store_release(&c->state, CREW_BLOCKED);
}

static crew_inline void crew_unblock(struct crew_cpu *c)
{
	(void)crew_xchg(&c->state, CREW_ACTIVE);
}

/* terminal: others stop waiting for this vCPU (record and replay) */
void crew_finish(struct crew_cpu *c);
/* record mode: emit the END record, then crew_finish() */
int crew_record_finish(struct crew_cpu *c);

/* hole 4: the range becomes owned by nobody */
int crew_reset(struct crew_cpu *c, const void *p, unsigned long len);

/* hole 5: the external writer (id CREW_EXT_ID), len <= CREW_RANGE_MAX */
int crew_ext_begin(struct crew_cpu *host, const void *p, unsigned long len,
		   int write);
void crew_ext_end(struct crew_cpu *host);

/* replay */
int crew_replay_start(struct crew_cpu *c, struct crew_reader *rd);
int crew_replay_slow(struct crew_cpu *c);

/*
 * crew_replay_slow, checking each record due now against this access: its
 * pc must be @pc (0: no check) and @covers(@priv, addr) must say that the
 * access touches the first byte the record took (NULL: pc only).  A
 * mismatch is CREW_ESITE, with bad_site filled in (found addr: @addr).
 */
typedef bool (*crew_covers_fn)(void *priv, u64 addr);
int crew_replay_slow_at(struct crew_cpu *c, u64 pc, crew_covers_fn covers,
			void *priv, u64 addr);

/* before an access: its site checked against any record due (see above) */
static crew_inline int crew_replay_begin_at(struct crew_cpu *c, u64 pc,
					    crew_covers_fn covers, void *priv, u64 addr)
{
	if (crew_likely(c->rp_next != crew_load(&c->seq)))
		return c->rp_err;
	return crew_replay_slow_at(c, pc, covers, priv, addr);
}

static crew_inline int crew_replay_begin(struct crew_cpu *c)
{
	return crew_replay_begin_at(c, 0, NULL, NULL, 0);
}

static crew_inline void crew_replay_end(struct crew_cpu *c)
{
	crew_release_plain(c);
}

/* the log must be consumed exactly: 0, or why not; then crew_finish() */
int crew_replay_finish(struct crew_cpu *c);

#endif /* CREW_H */
