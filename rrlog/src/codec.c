/* Fast Rr__Event codec: see codec.h for why and for the rules. */
#include <string.h>

#include "codec.h"
#include "format.h"

enum { WT_VARINT = 0, WT_LEN = 2 };

#define TAG(num, wt) (((uint32_t)(num) << 3) | (wt))

static inline size_t vsz(uint64_t v)
{
	return 1 + (63 - __builtin_clzll(v | 1)) / 7;
}

/* sint64 wire form; unsigned arithmetic avoids signed-shift UB. */
static inline uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t unzigzag(uint64_t v)
{
	return (int64_t)((v >> 1) ^ (0 - (v & 1)));
}

static inline uint8_t *vput(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* ---- encoding --------------------------------------------------------- */

/*
 * One pass: a submessage is written after a 1-byte length placeholder and
 * the length patched in afterwards; the rare submessage of 128 bytes or
 * more (DMA data, big checkpoints) is moved up to make room for a longer
 * varint.  Returns NULL where protobuf-c must do the job instead.
 */
static inline uint8_t *put_u64(uint8_t *p, uint32_t num, uint64_t v)
{
	if (v) {
		p = vput(p, TAG(num, 0));
		p = vput(p, v);
	}
	return p;
}

static inline uint8_t *put_enum(uint8_t *p, uint32_t num, int32_t v)
{
	return put_u64(p, num, (uint64_t)(int64_t)v);
}

static inline uint8_t *put_bool(uint8_t *p, uint32_t num, protobuf_c_boolean b)
{
	if (b) {
		p = vput(p, TAG(num, 0));
		*p++ = 1;
	}
	return p;
}

static inline uint8_t *put_len(uint8_t *p, uint32_t num, size_t len)
{
	p = vput(p, TAG(num, WT_LEN));
	return vput(p, len);
}

static inline uint8_t *put_bytes(uint8_t *p, uint32_t num,
				 const ProtobufCBinaryData *b)
{
	if (b->len) {
		p = put_len(p, num, b->len);
		memcpy(p, b->data, b->len);
		p += b->len;
	}
	return p;
}

/* Open a submessage: tag, placeholder length byte; returns body start. */
static inline uint8_t *sub_open(uint8_t *p, uint32_t num)
{
	p = vput(p, TAG(num, WT_LEN));
	return p + 1;
}

/* Close it: patch the length, moving the body if it needs more bytes. */
static inline uint8_t *sub_close(uint8_t *start, uint8_t *p)
{
	size_t len = p - start;
	if (__builtin_expect(len < 128, 1)) {
		start[-1] = (uint8_t)len;
		return p;
	}
	size_t extra = vsz(len) - 1;
	memmove(start + extra, start, len);
	vput(start - 1, len);
	return p + extra;
}

static inline uint8_t *put_position(uint8_t *p, uint32_t num,
				    const Rr__Position *m)
{
	if (!m)
		return p;
	if (m->base.n_unknown_fields)
		return NULL;
	uint8_t *s = sub_open(p, num);
	p = put_u64(s, 1, m->branches);
	p = put_u64(p, 2, zigzag(m->rip));
	p = put_u64(p, 3, m->rcx);
	p = put_u64(p, 4, m->detpoints);
	p = put_u64(p, 5, m->crew_seq);
	return sub_close(s, p);
}

static uint8_t *put_vcpu_pos_list(uint8_t *p, uint32_t num, size_t n,
				  Rr__VcpuPos **v)
{
	for (size_t i = 0; i < n; i++) {
		if (!v[i] || v[i]->base.n_unknown_fields)
			return NULL;
		uint8_t *s = sub_open(p, num);
		p = put_u64(s, 1, v[i]->vcpu);
		if (!(p = put_position(p, 2, v[i]->pos)))
			return NULL;
		p = sub_close(s, p);
	}
	return p;
}

size_t rr_event_encode_bound(const Rr__Event *ev)
{
	/* Position <= 57 bytes; VcpuPos/VcpuHash <= 64 + 3 + 11 of framing. */
	size_t b = 128;
	switch (ev->body_case) {
	case RR__EVENT__BODY_DMA_WRITE:
		if (!ev->dma_write)
			break;
		b += ev->dma_write->data.len + ev->dma_write->n_others * 96;
		break;
	case RR__EVENT__BODY_NET_PACKET:
		if (ev->net_packet)
			b += ev->net_packet->data.len;
		break;
	case RR__EVENT__BODY_CREW_TRANSFER:
		if (ev->crew_transfer)
			b += ev->crew_transfer->n_prev_owners * 96;
		break;
	case RR__EVENT__BODY_CHECKPOINT:
		if (ev->checkpoint)
			b += ev->checkpoint->ram_hash.len +
			     ev->checkpoint->n_vcpus * 96;
		break;
	case RR__EVENT__BODY_END:
		if (ev->end && ev->end->reason)
			b += strlen(ev->end->reason);
		break;
	default:
		break;
	}
	return b;
}

size_t rr_event_encode(const Rr__Event *ev, uint8_t *out)
{
	uint8_t *p = out, *s;
	const ProtobufCMessage *body = (const ProtobufCMessage *)ev->io_read;

	if (ev->base.n_unknown_fields)
		return 0;
	p = put_u64(p, 1, ev->vcpu);
	if (!(p = put_position(p, 2, ev->pos)))
		return 0;
	if (ev->body_case == RR__EVENT__BODY__NOT_SET)
		return p - out;   /* 0 for an empty event: protobuf-c agrees */
	/* protobuf-c skips a oneof member whose pointer is NULL; so do we,
	 * by declining.  Unknown fields need protobuf-c to be re-emitted. */
	if (!body || body->n_unknown_fields)
		return 0;
	s = sub_open(p, ev->body_case);
	switch (ev->body_case) {
	case RR__EVENT__BODY_IO_READ: {
		const Rr__IoRead *m = ev->io_read;
		p = put_enum(s, 1, m->space);
		p = put_u64(p, 2, m->addr);
		p = put_u64(p, 3, m->size);
		p = put_u64(p, 4, m->value);
		break;
	}
	case RR__EVENT__BODY_TIME_READ: {
		const Rr__TimeRead *m = ev->time_read;
		p = put_enum(s, 1, m->kind);
		p = put_u64(p, 2, m->value);
		p = put_u64(p, 3, m->aux);
		break;
	}
	case RR__EVENT__BODY_INTERRUPT:
		p = put_enum(s, 1, ev->interrupt->kind);
		p = put_u64(p, 2, ev->interrupt->vector);
		break;
	case RR__EVENT__BODY_DMA_WRITE: {
		const Rr__DmaWrite *m = ev->dma_write;
		p = put_u64(s, 1, m->gpa);
		p = put_bytes(p, 2, &m->data);
		p = put_vcpu_pos_list(p, 3, m->n_others, m->others);
		break;
	}
	case RR__EVENT__BODY_NET_PACKET:
		p = put_enum(s, 1, ev->net_packet->direction);
		p = put_bytes(p, 2, &ev->net_packet->data);
		break;
	case RR__EVENT__BODY_CREW_TRANSFER: {
		const Rr__CrewTransfer *m = ev->crew_transfer;
		p = put_enum(s, 1, m->granularity);
		p = put_u64(p, 2, m->addr);
		p = put_u64(p, 3, m->len);
		p = put_bool(p, 4, m->write);
		p = put_vcpu_pos_list(p, 5, m->n_prev_owners, m->prev_owners);
		break;
	}
	case RR__EVENT__BODY_CHECKPOINT: {
		const Rr__Checkpoint *m = ev->checkpoint;
		p = put_u64(s, 1, m->index);
		for (size_t i = 0; i < m->n_vcpus && p; i++) {
			const Rr__VcpuHash *h = m->vcpus[i];
			if (!h || h->base.n_unknown_fields)
				return 0;
			uint8_t *hs = sub_open(p, 2);
			p = put_u64(hs, 1, h->vcpu);
			if (!(p = put_position(p, 2, h->pos)))
				return 0;
			p = put_u64(p, 3, h->regs_hash);
			p = sub_close(hs, p);
		}
		if (!p)
			return 0;
		p = put_bytes(p, 3, &m->ram_hash);
		p = put_u64(p, 4, m->host_ns);
		p = put_u64(p, 5, m->crew_switch);
		break;
	}
	case RR__EVENT__BODY_END: {
		const Rr__End *m = ev->end;
		size_t rl = m->reason ? strlen(m->reason) : 0;
		if (m->untrained_shared || m->n_untrained_pcs ||
		    m->user_parallel || m->user_parallel_as ||
		    m->user_parallel_vcpus || m->user_parallel_pc)
			return 0;	/* once per log: protobuf-c's job */
		p = put_bool(s, 1, m->clean);
		if (rl) {
			p = put_len(p, 2, rl);
			memcpy(p, m->reason, rl);
			p += rl;
		}
		p = put_u64(p, 3, m->n_events);
		p = put_u64(p, 4, m->host_ns);
		break;
	}
	default:
		return 0;   /* a body case this codec does not know */
	}
	if (!p)
		return 0;
	p = sub_close(s, p);
	return p - out;
}

/* ---- decoding --------------------------------------------------------- */

struct dec {
	const uint8_t *p, *end;
	ProtobufCAllocator *a;
};

/*
 * One field: the whole tag (field number << 3 | wire type) stays in one
 * integer, and decoders switch on it: comparing number and wire type
 * separately made the compiler spill them as two 32-bit stores and reload
 * them as one 64-bit word, a store-forwarding stall that cost a third of
 * the decode time.
 */
struct field {
	uint64_t tag;
	uint64_t v;            /* varint value */
	const uint8_t *data;   /* length-delimited slice */
	size_t len;
};

/*
 * Varint decode.  1-byte values (tags, small numbers) take the first
 * branch; longer ones up to 8 bytes are decoded branch-free from one
 * 64-bit load (the data-dependent loop mispredicted on every field);
 * 9-10 byte values and buffer tails take the careful loop.
 */
static inline __attribute__((always_inline))
int vget(struct dec *d, uint64_t *v)
{
	const uint8_t *p = d->p;
	if (p < d->end && *p < 0x80) {
		*v = *p;
		d->p = p + 1;
		return 0;
	}
	if (d->end - p >= 8) {
		uint64_t w, stop;
		memcpy(&w, p, 8);   /* little-endian host: byte 0 lowest */
		stop = ~w & 0x8080808080808080ull;
		if (stop) {
			unsigned bits = __builtin_ctzll(stop) + 1;  /* 8 * len */
			uint64_t x = bits == 64 ? w : w & ((1ull << bits) - 1);
			x &= 0x7f7f7f7f7f7f7f7full;
			x = ((x & 0x7f007f007f007f00ull) >> 1) |
			    (x & 0x007f007f007f007full);
			x = ((x & 0x3fff00003fff0000ull) >> 2) |
			    (x & 0x00003fff00003fffull);
			x = ((x & 0x0fffffff00000000ull) >> 4) |
			    (x & 0x000000000fffffffull);
			*v = x;
			d->p = p + bits / 8;
			return 0;
		}
	}
	size_t n = rr_varint_decode(p, d->end, v);
	if (!n)
		return -1;
	d->p = p + n;
	return 0;
}

/* 1 with f filled, 0 at the end, -1 for anything the fast path refuses. */
static inline __attribute__((always_inline))
int next_field(struct dec *d, struct field *f)
{
	if (d->p == d->end)
		return 0;
	if (vget(d, &f->tag) || f->tag > 0xffffffffu)
		return -1;
	switch (f->tag & 7) {
	case WT_VARINT:
		return vget(d, &f->v) ? -1 : 1;
	case WT_LEN: {
		uint64_t len;
		if (vget(d, &len) || len > (uint64_t)(d->end - d->p))
			return -1;
		f->data = d->p;
		f->len = len;
		d->p += len;
		return 1;
	}
	default:
		return -1;
	}
}

static inline void *alloc(struct dec *d, size_t n)
{
	return d->a->alloc(d->a->allocator_data, n);
}

#define V(num) TAG(num, WT_VARINT)
#define L(num) TAG(num, WT_LEN)

/* Singular fields may appear once; a repeat means "merge": fallback. */
#define ONCE(num) do {							\
	if (seen & (1u << (num)))					\
		return -1;						\
	seen |= 1u << (num);						\
} while (0)

#define BYTES_OF(f) ((ProtobufCBinaryData){ (f).len, (uint8_t *)(f).data })

static int dec_position(struct dec *d0, const uint8_t *p, size_t len,
			Rr__Position **out)
{
	struct dec d = { p, p + len, d0->a };
	struct field f = { 0 };
	uint32_t seen = 0;
	int s;
	Rr__Position *m = alloc(d0, sizeof(*m));
	if (!m)
		return -1;
	rr__position__init(m);
	while ((s = next_field(&d, &f)) > 0) {
		switch (f.tag) {
		case V(1): ONCE(1); m->branches = f.v; break;
		case V(2): ONCE(2); m->rip = unzigzag(f.v); break;
		case V(3): ONCE(3); m->rcx = f.v; break;
		case V(4): ONCE(4); m->detpoints = f.v; break;
		case V(5): ONCE(5); m->crew_seq = f.v; break;
		default: return -1;
		}
	}
	*out = m;
	return s;
}

/* Append elem to a repeated field kept as (array, n) with doubling. */
static int push_ptr(struct dec *d, void ***arr, size_t *n, void *elem)
{
	/* Capacity is implicit: 4, then powers of two. */
	if (*n >= 4 && (*n & (*n - 1)) == 0) {
		void **a = alloc(d, 2 * *n * sizeof(void *));
		if (!a)
			return -1;
		memcpy(a, *arr, *n * sizeof(void *));
		*arr = a;
	} else if (*n == 0) {
		*arr = alloc(d, 4 * sizeof(void *));
		if (!*arr)
			return -1;
	}
	(*arr)[(*n)++] = elem;
	return 0;
}

static int dec_vcpu_pos(struct dec *d0, const uint8_t *p, size_t len,
			Rr__VcpuPos **out)
{
	struct dec d = { p, p + len, d0->a };
	struct field f = { 0 };
	uint32_t seen = 0;
	int s;
	Rr__VcpuPos *m = alloc(d0, sizeof(*m));
	if (!m)
		return -1;
	rr__vcpu_pos__init(m);
	while ((s = next_field(&d, &f)) > 0) {
		switch (f.tag) {
		case V(1): ONCE(1); m->vcpu = (uint32_t)f.v; break;
		case L(2):
			ONCE(2);
			if (dec_position(&d, f.data, f.len, &m->pos))
				return -1;
			break;
		default: return -1;
		}
	}
	*out = m;
	return s;
}

static int dec_vcpu_hash(struct dec *d0, const uint8_t *p, size_t len,
			 Rr__VcpuHash **out)
{
	struct dec d = { p, p + len, d0->a };
	struct field f = { 0 };
	uint32_t seen = 0;
	int s;
	Rr__VcpuHash *m = alloc(d0, sizeof(*m));
	if (!m)
		return -1;
	rr__vcpu_hash__init(m);
	while ((s = next_field(&d, &f)) > 0) {
		switch (f.tag) {
		case V(1): ONCE(1); m->vcpu = (uint32_t)f.v; break;
		case L(2):
			ONCE(2);
			if (dec_position(&d, f.data, f.len, &m->pos))
				return -1;
			break;
		case V(3): ONCE(3); m->regs_hash = f.v; break;
		default: return -1;
		}
	}
	*out = m;
	return s;
}

/* int32/enum fields: protobuf-c keeps the low 32 bits of the varint. */
#define ENUM(v) ((int32_t)(uint32_t)(v))

/*
 * Body messages.  Written as switches on the tag so each reads like its
 * message in rr.proto.
 */
static int dec_body(struct dec *d0, uint32_t which, const uint8_t *p,
		    size_t len, Rr__Event *ev)
{
	struct dec d = { p, p + len, d0->a };
	struct field f = { 0 };
	uint32_t seen = 0;
	int s;

	switch (which) {
	case RR__EVENT__BODY_IO_READ: {
		Rr__IoRead *m = alloc(d0, sizeof(*m));
		if (!m)
			return -1;
		rr__io_read__init(m);
		while ((s = next_field(&d, &f)) > 0) {
			switch (f.tag) {
			case V(1): ONCE(1); m->space = ENUM(f.v); break;
			case V(2): ONCE(2); m->addr = f.v; break;
			case V(3): ONCE(3); m->size = (uint32_t)f.v; break;
			case V(4): ONCE(4); m->value = f.v; break;
			default: return -1;
			}
		}
		ev->io_read = m;
		return s;
	}
	case RR__EVENT__BODY_TIME_READ: {
		Rr__TimeRead *m = alloc(d0, sizeof(*m));
		if (!m)
			return -1;
		rr__time_read__init(m);
		while ((s = next_field(&d, &f)) > 0) {
			switch (f.tag) {
			case V(1): ONCE(1); m->kind = ENUM(f.v); break;
			case V(2): ONCE(2); m->value = f.v; break;
			case V(3): ONCE(3); m->aux = f.v; break;
			default: return -1;
			}
		}
		ev->time_read = m;
		return s;
	}
	case RR__EVENT__BODY_INTERRUPT: {
		Rr__Interrupt *m = alloc(d0, sizeof(*m));
		if (!m)
			return -1;
		rr__interrupt__init(m);
		while ((s = next_field(&d, &f)) > 0) {
			switch (f.tag) {
			case V(1): ONCE(1); m->kind = ENUM(f.v); break;
			case V(2): ONCE(2); m->vector = (uint32_t)f.v; break;
			default: return -1;
			}
		}
		ev->interrupt = m;
		return s;
	}
	case RR__EVENT__BODY_DMA_WRITE: {
		Rr__DmaWrite *m = alloc(d0, sizeof(*m));
		if (!m)
			return -1;
		rr__dma_write__init(m);
		while ((s = next_field(&d, &f)) > 0) {
			Rr__VcpuPos *e;
			switch (f.tag) {
			case V(1): ONCE(1); m->gpa = f.v; break;
			case L(2): ONCE(2); m->data = BYTES_OF(f); break;
			case L(3):
				if (dec_vcpu_pos(&d, f.data, f.len, &e) ||
				    push_ptr(&d, (void ***)&m->others,
					     &m->n_others, e))
					return -1;
				break;
			default: return -1;
			}
		}
		ev->dma_write = m;
		return s;
	}
	case RR__EVENT__BODY_NET_PACKET: {
		Rr__NetPacket *m = alloc(d0, sizeof(*m));
		if (!m)
			return -1;
		rr__net_packet__init(m);
		while ((s = next_field(&d, &f)) > 0) {
			switch (f.tag) {
			case V(1): ONCE(1); m->direction = ENUM(f.v); break;
			case L(2): ONCE(2); m->data = BYTES_OF(f); break;
			default: return -1;
			}
		}
		ev->net_packet = m;
		return s;
	}
	case RR__EVENT__BODY_CREW_TRANSFER: {
		Rr__CrewTransfer *m = alloc(d0, sizeof(*m));
		if (!m)
			return -1;
		rr__crew_transfer__init(m);
		while ((s = next_field(&d, &f)) > 0) {
			Rr__VcpuPos *e;
			switch (f.tag) {
			case V(1): ONCE(1); m->granularity = ENUM(f.v); break;
			case V(2): ONCE(2); m->addr = f.v; break;
			case V(3): ONCE(3); m->len = f.v; break;
			case V(4): ONCE(4); m->write = f.v != 0; break;
			case L(5):
				if (dec_vcpu_pos(&d, f.data, f.len, &e) ||
				    push_ptr(&d, (void ***)&m->prev_owners,
					     &m->n_prev_owners, e))
					return -1;
				break;
			default: return -1;
			}
		}
		ev->crew_transfer = m;
		return s;
	}
	case RR__EVENT__BODY_CHECKPOINT: {
		Rr__Checkpoint *m = alloc(d0, sizeof(*m));
		if (!m)
			return -1;
		rr__checkpoint__init(m);
		while ((s = next_field(&d, &f)) > 0) {
			Rr__VcpuHash *e;
			switch (f.tag) {
			case V(1): ONCE(1); m->index = f.v; break;
			case L(2):
				if (dec_vcpu_hash(&d, f.data, f.len, &e) ||
				    push_ptr(&d, (void ***)&m->vcpus,
					     &m->n_vcpus, e))
					return -1;
				break;
			case L(3): ONCE(3); m->ram_hash = BYTES_OF(f); break;
			case V(4): ONCE(4); m->host_ns = f.v; break;
			case V(5): ONCE(5); m->crew_switch = (uint32_t)f.v; break;
			default: return -1;
			}
		}
		ev->checkpoint = m;
		return s;
	}
	case RR__EVENT__BODY_END: {
		Rr__End *m = alloc(d0, sizeof(*m));
		if (!m)
			return -1;
		rr__end__init(m);
		while ((s = next_field(&d, &f)) > 0) {
			char *str;
			switch (f.tag) {
			case V(1): ONCE(1); m->clean = f.v != 0; break;
			case L(2):
				ONCE(2);
				str = alloc(&d, f.len + 1);
				if (!str)
					return -1;
				memcpy(str, f.data, f.len);
				str[f.len] = 0;
				m->reason = str;
				break;
			case V(3): ONCE(3); m->n_events = f.v; break;
			case V(4): ONCE(4); m->host_ns = f.v; break;
			default: return -1;
			}
		}
		ev->end = m;
		return s;
	}
	}
	return -1;
}

int rr_event_decode_fast(const uint8_t *p, size_t len,
			 ProtobufCAllocator *a, Rr__Event **out)
{
	struct dec d = { p, p + len, a };
	struct field f = { 0 };
	uint32_t seen = 0;
	int s;
	Rr__Event *ev = alloc(&d, sizeof(*ev));

	if (!ev)
		return RR_DEC_FALLBACK;
	rr__event__init(ev);
	while ((s = next_field(&d, &f)) > 0) {
		if (f.tag == V(1) && !(seen & 2)) {
			seen |= 2;
			ev->vcpu = (uint32_t)f.v;
		} else if (f.tag == L(2) && !(seen & 4)) {
			seen |= 4;
			if (dec_position(&d, f.data, f.len, &ev->pos))
				return RR_DEC_FALLBACK;
		} else if (f.tag >= L(RR__EVENT__BODY_IO_READ) &&
			   f.tag <= L(RR__EVENT__BODY_END) &&
			   (f.tag & 7) == WT_LEN &&
			   ev->body_case == RR__EVENT__BODY__NOT_SET) {
			/* oneof: a second member (or a repeat) -> fallback */
			uint32_t num = (uint32_t)(f.tag >> 3);
			if (dec_body(&d, num, f.data, f.len, ev))
				return RR_DEC_FALLBACK;
			ev->body_case = num;
		} else {
			return RR_DEC_FALLBACK;
		}
	}
	if (s < 0)
		return RR_DEC_FALLBACK;
	*out = ev;
	return RR_DEC_OK;
}
