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
		break;
	}
	case RR__EVENT__BODY_END: {
		const Rr__End *m = ev->end;
		size_t rl = m->reason ? strlen(m->reason) : 0;
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

/* Next field: 1 with num/wt/value (varint) or slice (len), 0 at end,
 * -1 on anything the fast path does not take. */
struct field {
	uint32_t num, wt;
	uint64_t v;
	const uint8_t *data;
	size_t len;
};

static inline int vget(struct dec *d, uint64_t *v)
{
	const uint8_t *p = d->p;
	if (p < d->end && *p < 0x80) {   /* the common 1-byte case */
		*v = *p;
		d->p = p + 1;
		return 0;
	}
	size_t n = rr_varint_decode(p, d->end, v);
	if (!n)
		return -1;
	d->p = p + n;
	return 0;
}

static inline __attribute__((always_inline))
int next_field(struct dec *d, struct field *f)
{
	uint64_t tag;
	if (d->p == d->end)
		return 0;
	if (vget(d, &tag) || tag > 0xffffffffu)
		return -1;
	f->num = (uint32_t)(tag >> 3);
	f->wt = tag & 7;
	if (f->wt == WT_VARINT)
		return vget(d, &f->v) ? -1 : 1;
	if (f->wt == WT_LEN) {
		uint64_t len;
		if (vget(d, &len) || len > (uint64_t)(d->end - d->p))
			return -1;
		f->data = d->p;
		f->len = len;
		d->p += len;
		return 1;
	}
	return -1;
}

static inline void *alloc(struct dec *d, size_t n)
{
	return d->a->alloc(d->a->allocator_data, n);
}

/* Singular fields may appear once; a second time means "merge": fallback. */
#define SEEN(mask, num) ((mask) & (1u << (num)) ? 1 : ((mask) |= 1u << (num), 0))

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
		if (f.wt != WT_VARINT || f.num < 1 || f.num > 5 ||
		    SEEN(seen, f.num))
			return -1;
		switch (f.num) {
		case 1: m->branches = f.v; break;
		case 2: m->rip = unzigzag(f.v); break;
		case 3: m->rcx = f.v; break;
		case 4: m->detpoints = f.v; break;
		case 5: m->crew_seq = f.v; break;
		}
	}
	*out = m;
	return s;
}

/* Append elem to a repeated field kept as (array, n) with doubling. */
static int push_ptr(struct dec *d, void ***arr, size_t *n, void *elem)
{
	/* Capacity is implicit: powers of two from 4. */
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
		if (f.num < 1 || f.num > 2 || SEEN(seen, f.num))
			return -1;
		if (f.num == 1 && f.wt == WT_VARINT)
			m->vcpu = (uint32_t)f.v;
		else if (f.num == 2 && f.wt == WT_LEN) {
			if (dec_position(&d, f.data, f.len, &m->pos))
				return -1;
		} else
			return -1;
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
		if (f.num < 1 || f.num > 3 || SEEN(seen, f.num))
			return -1;
		if (f.num == 2) {
			if (f.wt != WT_LEN ||
			    dec_position(&d, f.data, f.len, &m->pos))
				return -1;
		} else if (f.wt != WT_VARINT) {
			return -1;
		} else if (f.num == 1) {
			m->vcpu = (uint32_t)f.v;
		} else {
			m->regs_hash = f.v;
		}
	}
	*out = m;
	return s;
}

/*
 * Field table for the body messages: for each field number, expected wire
 * type and where it goes.  Kept as code (switches) rather than tables:
 * the compiler turns it into jumps and it reads like the .proto.
 */
#define BYTES_OF(f) ((ProtobufCBinaryData){ (f).len, (uint8_t *)(f).data })

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
			if (f.wt != WT_VARINT || f.num < 1 || f.num > 4 ||
			    SEEN(seen, f.num))
				return -1;
			switch (f.num) {
			case 1: m->space = (int32_t)(uint32_t)f.v; break;
			case 2: m->addr = f.v; break;
			case 3: m->size = (uint32_t)f.v; break;
			case 4: m->value = f.v; break;
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
			if (f.wt != WT_VARINT || f.num < 1 || f.num > 3 ||
			    SEEN(seen, f.num))
				return -1;
			switch (f.num) {
			case 1: m->kind = (int32_t)(uint32_t)f.v; break;
			case 2: m->value = f.v; break;
			case 3: m->aux = f.v; break;
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
			if (f.wt != WT_VARINT || f.num < 1 || f.num > 2 ||
			    SEEN(seen, f.num))
				return -1;
			if (f.num == 1)
				m->kind = (int32_t)(uint32_t)f.v;
			else
				m->vector = (uint32_t)f.v;
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
			if (f.num == 1 && f.wt == WT_VARINT &&
			    !SEEN(seen, 1)) {
				m->gpa = f.v;
			} else if (f.num == 2 && f.wt == WT_LEN &&
				   !SEEN(seen, 2)) {
				m->data = BYTES_OF(f);
			} else if (f.num == 3 && f.wt == WT_LEN) {
				Rr__VcpuPos *e;
				if (dec_vcpu_pos(&d, f.data, f.len, &e) ||
				    push_ptr(&d, (void ***)&m->others,
					     &m->n_others, e))
					return -1;
			} else {
				return -1;
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
			if (f.num == 1 && f.wt == WT_VARINT && !SEEN(seen, 1))
				m->direction = (int32_t)(uint32_t)f.v;
			else if (f.num == 2 && f.wt == WT_LEN && !SEEN(seen, 2))
				m->data = BYTES_OF(f);
			else
				return -1;
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
			if (f.num == 5 && f.wt == WT_LEN) {
				Rr__VcpuPos *e;
				if (dec_vcpu_pos(&d, f.data, f.len, &e) ||
				    push_ptr(&d, (void ***)&m->prev_owners,
					     &m->n_prev_owners, e))
					return -1;
				continue;
			}
			if (f.wt != WT_VARINT || f.num < 1 || f.num > 4 ||
			    SEEN(seen, f.num))
				return -1;
			switch (f.num) {
			case 1: m->granularity = (int32_t)(uint32_t)f.v; break;
			case 2: m->addr = f.v; break;
			case 3: m->len = f.v; break;
			case 4: m->write = f.v != 0; break;
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
			if (f.num == 2 && f.wt == WT_LEN) {
				Rr__VcpuHash *e;
				if (dec_vcpu_hash(&d, f.data, f.len, &e) ||
				    push_ptr(&d, (void ***)&m->vcpus,
					     &m->n_vcpus, e))
					return -1;
			} else if (f.num == 3 && f.wt == WT_LEN &&
				   !SEEN(seen, 3)) {
				m->ram_hash = BYTES_OF(f);
			} else if ((f.num == 1 || f.num == 4) &&
				   f.wt == WT_VARINT && !SEEN(seen, f.num)) {
				if (f.num == 1)
					m->index = f.v;
				else
					m->host_ns = f.v;
			} else {
				return -1;
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
			if (f.num == 2 && f.wt == WT_LEN && !SEEN(seen, 2)) {
				char *str = alloc(&d, f.len + 1);
				if (!str)
					return -1;
				memcpy(str, f.data, f.len);
				str[f.len] = 0;
				m->reason = str;
			} else if (f.num >= 1 && f.num <= 4 && f.num != 2 &&
				   f.wt == WT_VARINT && !SEEN(seen, f.num)) {
				if (f.num == 1)
					m->clean = f.v != 0;
				else if (f.num == 3)
					m->n_events = f.v;
				else
					m->host_ns = f.v;
			} else {
				return -1;
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
		if (f.num == 1 && f.wt == WT_VARINT && !SEEN(seen, 1)) {
			ev->vcpu = (uint32_t)f.v;
		} else if (f.num == 2 && f.wt == WT_LEN && !SEEN(seen, 2)) {
			if (dec_position(&d, f.data, f.len, &ev->pos))
				return RR_DEC_FALLBACK;
		} else if (f.num >= RR__EVENT__BODY_IO_READ &&
			   f.num <= RR__EVENT__BODY_END && f.wt == WT_LEN &&
			   ev->body_case == RR__EVENT__BODY__NOT_SET) {
			/* oneof: a second member (or repeat) -> fallback */
			if (dec_body(&d, f.num, f.data, f.len, ev))
				return RR_DEC_FALLBACK;
			ev->body_case = f.num;
		} else {
			return RR_DEC_FALLBACK;
		}
	}
	if (s < 0)
		return RR_DEC_FALLBACK;
	*out = ev;
	return RR_DEC_OK;
}
