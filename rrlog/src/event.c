/*
 * Event helpers: names, counters, freeing, and builders that fill an
 * Rr__Event in caller-provided (usually stack) storage, so the recorder's
 * hot path does no allocation and no protobuf boilerplate.
 */
#include <stdlib.h>

#include "rrlog.h"

void rr_event_free(Rr__Event *ev)
{
	if (ev)
		rr__event__free_unpacked(ev, NULL);
}

const char *rr_event_kind_name(Rr__Event__BodyCase c)
{
	switch (c) {
	case RR__EVENT__BODY_IO_READ:       return "io_read";
	case RR__EVENT__BODY_TIME_READ:     return "time_read";
	case RR__EVENT__BODY_INTERRUPT:     return "interrupt";
	case RR__EVENT__BODY_DMA_WRITE:     return "dma_write";
	case RR__EVENT__BODY_NET_PACKET:    return "net_packet";
	case RR__EVENT__BODY_CREW_TRANSFER: return "crew_transfer";
	case RR__EVENT__BODY_CHECKPOINT:    return "checkpoint";
	case RR__EVENT__BODY_END:           return "end";
	default:                            return "none";
	}
}

int rr_event_kind_slot(Rr__Event__BodyCase c)
{
	if (c >= RR__EVENT__BODY_IO_READ && c <= RR__EVENT__BODY_END)
		return c - RR__EVENT__BODY_IO_READ + 1;
	return 0;
}

void rr_position_set(Rr__Position *dst, const rr_pos *src)
{
	rr__position__init(dst);
	dst->branches = src->branches;
	dst->rip = (int64_t)src->rip;   /* sint64 on the wire, see rr.proto */
	dst->rcx = src->rcx;
	dst->detpoints = src->detpoints;
	dst->crew_seq = src->crew_seq;
}

rr_pos rr_pos_from(const Rr__Position *p)
{
	rr_pos r = { 0 };
	if (p) {
		r.branches = p->branches;
		r.rip = (uint64_t)p->rip;
		r.rcx = p->rcx;
		r.detpoints = p->detpoints;
		r.crew_seq = p->crew_seq;
	}
	return r;
}

void rr_vcpu_pos_init(Rr__VcpuPos *vp, Rr__Position *pos_storage,
		      uint32_t vcpu, const rr_pos *pos)
{
	rr__vcpu_pos__init(vp);
	vp->vcpu = vcpu;
	if (pos) {
		rr_position_set(pos_storage, pos);
		vp->pos = pos_storage;
	}
}

static Rr__Event *ev_common(rr_event_buf *b, uint32_t vcpu, const rr_pos *pos,
			    Rr__Event__BodyCase c, void *body)
{
	rr__event__init(&b->ev);
	b->ev.vcpu = vcpu;
	if (pos) {
		rr_position_set(&b->pos, pos);
		b->ev.pos = &b->pos;
	}
	b->ev.body_case = c;
	/* All union members are pointers; any of them aliases the others. */
	b->ev.io_read = body;
	return &b->ev;
}

Rr__Event *rr_ev_io_read(rr_event_buf *b, uint32_t vcpu, const rr_pos *pos,
			 Rr__IoRead__Space space, uint64_t addr,
			 uint32_t size, uint64_t value)
{
	Rr__IoRead *m = &b->body.io_read;
	rr__io_read__init(m);
	m->space = space;
	m->addr = addr;
	m->size = size;
	m->value = value;
	return ev_common(b, vcpu, pos, RR__EVENT__BODY_IO_READ, m);
}

Rr__Event *rr_ev_time_read(rr_event_buf *b, uint32_t vcpu, const rr_pos *pos,
			   Rr__TimeRead__Kind kind, uint64_t value,
			   uint64_t aux)
{
	Rr__TimeRead *m = &b->body.time_read;
	rr__time_read__init(m);
	m->kind = kind;
	m->value = value;
	m->aux = aux;
	return ev_common(b, vcpu, pos, RR__EVENT__BODY_TIME_READ, m);
}

Rr__Event *rr_ev_interrupt(rr_event_buf *b, uint32_t vcpu, const rr_pos *pos,
			   Rr__Interrupt__Kind kind, uint32_t vector)
{
	Rr__Interrupt *m = &b->body.interrupt;
	rr__interrupt__init(m);
	m->kind = kind;
	m->vector = vector;
	return ev_common(b, vcpu, pos, RR__EVENT__BODY_INTERRUPT, m);
}

Rr__Event *rr_ev_dma_write(rr_event_buf *b, uint32_t vcpu, const rr_pos *pos,
			   uint64_t gpa, const void *data, size_t len,
			   size_t n_others, Rr__VcpuPos **others)
{
	Rr__DmaWrite *m = &b->body.dma_write;
	rr__dma_write__init(m);
	m->gpa = gpa;
	m->data.data = (uint8_t *)data;
	m->data.len = len;
	m->n_others = n_others;
	m->others = others;
	return ev_common(b, vcpu, pos, RR__EVENT__BODY_DMA_WRITE, m);
}

Rr__Event *rr_ev_net_packet(rr_event_buf *b, uint32_t vcpu, const rr_pos *pos,
			    Rr__NetPacket__Direction dir, const void *data,
			    size_t len)
{
	Rr__NetPacket *m = &b->body.net_packet;
	rr__net_packet__init(m);
	m->direction = dir;
	m->data.data = (uint8_t *)data;
	m->data.len = len;
	return ev_common(b, vcpu, pos, RR__EVENT__BODY_NET_PACKET, m);
}

Rr__Event *rr_ev_crew_transfer(rr_event_buf *b, uint32_t vcpu,
			       const rr_pos *pos,
			       Rr__CrewTransfer__Granularity gran,
			       uint64_t addr, uint64_t len, int write,
			       size_t n_prev, Rr__VcpuPos **prev_owners)
{
	Rr__CrewTransfer *m = &b->body.crew_transfer;
	rr__crew_transfer__init(m);
	m->granularity = gran;
	m->addr = addr;
	m->len = len;
	m->write = write != 0;
	m->n_prev_owners = n_prev;
	m->prev_owners = prev_owners;
	return ev_common(b, vcpu, pos, RR__EVENT__BODY_CREW_TRANSFER, m);
}

Rr__Event *rr_ev_checkpoint(rr_event_buf *b, uint32_t vcpu, const rr_pos *pos,
			    uint64_t index, size_t n_vcpus,
			    Rr__VcpuHash **vcpus, const void *ram_hash,
			    size_t ram_hash_len, uint64_t host_ns)
{
	Rr__Checkpoint *m = &b->body.checkpoint;
	rr__checkpoint__init(m);
	m->index = index;
	m->n_vcpus = n_vcpus;
	m->vcpus = vcpus;
	m->ram_hash.data = (uint8_t *)ram_hash;
	m->ram_hash.len = ram_hash_len;
	m->host_ns = host_ns;
	return ev_common(b, vcpu, pos, RR__EVENT__BODY_CHECKPOINT, m);
}

Rr__Event *rr_ev_end(rr_event_buf *b, uint32_t vcpu, const rr_pos *pos,
		     int clean, const char *reason, uint64_t n_events,
		     uint64_t host_ns)
{
	Rr__End *m = &b->body.end;
	rr__end__init(m);
	m->clean = clean != 0;
	/* protobuf-c treats "" specially only by pointer; any string works. */
	m->reason = (char *)(reason ? reason : "");
	m->n_events = n_events;
	m->host_ns = host_ns;
	return ev_common(b, vcpu, pos, RR__EVENT__BODY_END, m);
}
