#include <inttypes.h>

#include "event_fmt.h"
#include "util.h"

static const char *io_space(int s)
{
	return s == RR__IO_READ__SPACE__MMIO ? "mmio" : s == 0 ? "pio" : "?";
}

static const char *time_kind(int k)
{
	static const char *n[] = { "rdtsc", "rdtscp", "rdrand", "rdseed",
				   "rdmsr" };
	return k >= 0 && k < 5 ? n[k] : "?";
}

static const char *irq_kind(int k)
{
	static const char *n[] = { "hard", "nmi", "init", "sipi", "smi" };
	return k >= 0 && k < 5 ? n[k] : "?";
}

static void text_pos(FILE *f, const Rr__Position *p)
{
	if (!p) {
		fputs("@-", f);
		return;
	}
	fprintf(f, "@br=%" PRIu64 ",rip=0x%" PRIx64, p->branches,
		(uint64_t)p->rip);
	if (p->rcx)
		fprintf(f, ",rcx=%" PRIu64, p->rcx);
	if (p->detpoints)
		fprintf(f, ",dp=%" PRIu64, p->detpoints);
	if (p->crew_seq)
		fprintf(f, ",crew=%" PRIu64, p->crew_seq);
}

static void text_vcpu(FILE *f, uint32_t v)
{
	if (v == RR_VCPU_NONE)
		fputs("dev", f);
	else
		fprintf(f, "cpu%u", v);
}

static void text_vcpu_pos_list(FILE *f, size_t n, Rr__VcpuPos **vp)
{
	fputs(" [", f);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(' ', f);
		text_vcpu(f, vp[i]->vcpu);
		text_pos(f, vp[i]->pos);
	}
	fputc(']', f);
}

void event_print_text(FILE *f, uint64_t index, const Rr__Event *ev)
{
	fprintf(f, "#%" PRIu64 " ", index);
	text_vcpu(f, ev->vcpu);
	fputc(' ', f);
	text_pos(f, ev->pos);
	fprintf(f, " %s", rr_event_kind_name(ev->body_case));
	switch (ev->body_case) {
	case RR__EVENT__BODY_IO_READ: {
		const Rr__IoRead *m = ev->io_read;
		fprintf(f, " %s addr=0x%" PRIx64 " size=%u value=0x%" PRIx64,
			io_space(m->space), m->addr, m->size, m->value);
		break;
	}
	case RR__EVENT__BODY_TIME_READ: {
		const Rr__TimeRead *m = ev->time_read;
		fprintf(f, " %s value=0x%" PRIx64, time_kind(m->kind), m->value);
		if (m->aux)
			fprintf(f, " aux=0x%" PRIx64, m->aux);
		break;
	}
	case RR__EVENT__BODY_INTERRUPT:
		fprintf(f, " %s vector=0x%x", irq_kind(ev->interrupt->kind),
			ev->interrupt->vector);
		break;
	case RR__EVENT__BODY_DMA_WRITE: {
		const Rr__DmaWrite *m = ev->dma_write;
		fprintf(f, " gpa=0x%" PRIx64 " len=%zu data=", m->gpa,
			m->data.len);
		print_hex(f, m->data.data, m->data.len, 32);
		text_vcpu_pos_list(f, m->n_others, m->others);
		break;
	}
	case RR__EVENT__BODY_NET_PACKET: {
		const Rr__NetPacket *m = ev->net_packet;
		fprintf(f, " %s len=%zu data=", m->direction ? "out" : "in",
			m->data.len);
		print_hex(f, m->data.data, m->data.len, 32);
		break;
	}
	case RR__EVENT__BODY_CREW_TRANSFER: {
		const Rr__CrewTransfer *m = ev->crew_transfer;
		fprintf(f, " %s %s addr=0x%" PRIx64 " len=%" PRIu64 " from",
			m->granularity ? "page" : "byte",
			m->write ? "write" : "read", m->addr, m->len);
		text_vcpu_pos_list(f, m->n_prev_owners, m->prev_owners);
		break;
	}
	case RR__EVENT__BODY_CHECKPOINT: {
		const Rr__Checkpoint *m = ev->checkpoint;
		fprintf(f, " index=%" PRIu64 " host_ns=%" PRIu64 " ram=",
			m->index, m->host_ns);
		print_hex(f, m->ram_hash.data, m->ram_hash.len, 32);
		fputs(" [", f);
		for (size_t i = 0; i < m->n_vcpus; i++) {
			if (i)
				fputc(' ', f);
			text_vcpu(f, m->vcpus[i]->vcpu);
			text_pos(f, m->vcpus[i]->pos);
			fprintf(f, ",regs=%016" PRIx64, m->vcpus[i]->regs_hash);
		}
		fputc(']', f);
		break;
	}
	case RR__EVENT__BODY_END:
		fprintf(f, " %s n_events=%" PRIu64 " host_ns=%" PRIu64 " reason=",
			ev->end->clean ? "clean" : "unclean", ev->end->n_events,
			ev->end->host_ns);
		json_string(f, ev->end->reason ? ev->end->reason : "");
		break;
	default:
		break;
	}
}

static void json_pos(FILE *f, const Rr__Position *p)
{
	if (!p) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"branches\":%" PRIu64 ",\"rip\":%" PRIu64 ",\"rcx\":%"
		PRIu64 ",\"detpoints\":%" PRIu64 ",\"crew_seq\":%" PRIu64 "}",
		p->branches, (uint64_t)p->rip, p->rcx, p->detpoints,
		p->crew_seq);
}

static void json_vcpu(FILE *f, uint32_t v)
{
	if (v == RR_VCPU_NONE)
		fputs("null", f);
	else
		fprintf(f, "%u", v);
}

static void json_bytes(FILE *f, const ProtobufCBinaryData *b)
{
	fputc('"', f);
	print_hex(f, b->data, b->len, b->len);
	fputc('"', f);
}

static void json_vcpu_pos_list(FILE *f, size_t n, Rr__VcpuPos **vp)
{
	fputc('[', f);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ",{\"vcpu\":" : "{\"vcpu\":", f);
		json_vcpu(f, vp[i]->vcpu);
		fputs(",\"pos\":", f);
		json_pos(f, vp[i]->pos);
		fputc('}', f);
	}
	fputc(']', f);
}

/*
 * 64-bit values are emitted as JSON numbers; consumers in languages with
 * double-only numbers (JavaScript) should parse with big-int support.
 */
void event_print_json(FILE *f, uint64_t index, const Rr__Event *ev)
{
	fprintf(f, "{\"index\":%" PRIu64 ",\"vcpu\":", index);
	json_vcpu(f, ev->vcpu);
	fputs(",\"pos\":", f);
	json_pos(f, ev->pos);
	fprintf(f, ",\"kind\":\"%s\"", rr_event_kind_name(ev->body_case));
	switch (ev->body_case) {
	case RR__EVENT__BODY_IO_READ: {
		const Rr__IoRead *m = ev->io_read;
		fprintf(f, ",\"space\":\"%s\",\"addr\":%" PRIu64 ",\"size\":%u,"
			"\"value\":%" PRIu64, io_space(m->space), m->addr,
			m->size, m->value);
		break;
	}
	case RR__EVENT__BODY_TIME_READ: {
		const Rr__TimeRead *m = ev->time_read;
		fprintf(f, ",\"time_kind\":\"%s\",\"value\":%" PRIu64 ",\"aux\":%"
			PRIu64, time_kind(m->kind), m->value, m->aux);
		break;
	}
	case RR__EVENT__BODY_INTERRUPT:
		fprintf(f, ",\"irq_kind\":\"%s\",\"vector\":%u",
			irq_kind(ev->interrupt->kind), ev->interrupt->vector);
		break;
	case RR__EVENT__BODY_DMA_WRITE:
		fprintf(f, ",\"gpa\":%" PRIu64 ",\"data\":", ev->dma_write->gpa);
		json_bytes(f, &ev->dma_write->data);
		fputs(",\"others\":", f);
		json_vcpu_pos_list(f, ev->dma_write->n_others,
				   ev->dma_write->others);
		break;
	case RR__EVENT__BODY_NET_PACKET:
		fprintf(f, ",\"direction\":\"%s\",\"data\":",
			ev->net_packet->direction ? "out" : "in");
		json_bytes(f, &ev->net_packet->data);
		break;
	case RR__EVENT__BODY_CREW_TRANSFER: {
		const Rr__CrewTransfer *m = ev->crew_transfer;
		fprintf(f, ",\"granularity\":\"%s\",\"addr\":%" PRIu64 ",\"len\":%"
			PRIu64 ",\"write\":%s,\"prev_owners\":",
			m->granularity ? "page" : "byte", m->addr, m->len,
			m->write ? "true" : "false");
		json_vcpu_pos_list(f, m->n_prev_owners, m->prev_owners);
		break;
	}
	case RR__EVENT__BODY_CHECKPOINT: {
		const Rr__Checkpoint *m = ev->checkpoint;
		fprintf(f, ",\"cp_index\":%" PRIu64 ",\"host_ns\":%" PRIu64
			",\"ram_hash\":", m->index, m->host_ns);
		json_bytes(f, &m->ram_hash);
		fputs(",\"vcpus\":[", f);
		for (size_t i = 0; i < m->n_vcpus; i++) {
			fputs(i ? ",{\"vcpu\":" : "{\"vcpu\":", f);
			json_vcpu(f, m->vcpus[i]->vcpu);
			fputs(",\"pos\":", f);
			json_pos(f, m->vcpus[i]->pos);
			fprintf(f, ",\"regs_hash\":%" PRIu64 "}",
				m->vcpus[i]->regs_hash);
		}
		fputc(']', f);
		break;
	}
	case RR__EVENT__BODY_END:
		fprintf(f, ",\"clean\":%s,\"n_events\":%" PRIu64 ",\"host_ns\":%"
			PRIu64 ",\"reason\":", ev->end->clean ? "true" : "false",
			ev->end->n_events, ev->end->host_ns);
		json_string(f, ev->end->reason ? ev->end->reason : "");
		break;
	default:
		break;
	}
	fputc('}', f);
}
