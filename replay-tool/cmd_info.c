/* replay-vm info: what a log contains, how big, how fast it grew. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "util.h"

static const char usage[] =
"usage: replay-vm info LOG\n"
"\n"
"Summarize a run.rr log: the recorded configuration (vCPUs, RAM, accel,\n"
"CREW mode, images, QEMU version, command line, hashes), the duration,\n"
"event counts by kind and by vCPU, raw and compressed sizes, and the log\n"
"growth rate in MB/s when the duration is known.  Duration comes from\n"
"the End event's host_ns, else the last checkpoint's, else the TSC reads\n"
"and the header's tsc_khz.  Reads (decodes) every event.\n"
"\n"
"A truncated log (crashed recording) is summarized up to where it ends,\n"
"with a warning.  Exit status: 0 ok, 1 read error, 64 bad usage.\n"
"\n"
"examples:\n"
"  replay-vm info run.rr\n"
"  replay-vm synth /tmp/s.rr --events 100000 && replay-vm info /tmp/s.rr\n";

static const char *crew_name(int m)
{
	return m == 1 ? "page" : m == 2 ? "byte" : m == 0 ? "none" : "?";
}

static void hash_line(const char *name, const ProtobufCBinaryData *b)
{
	if (!b->len)
		return;
	printf("  %-18s ", name);
	print_hex(stdout, b->data, b->len, 32);
	putchar('\n');
}

static void print_header(const Rr__Header *h)
{
	printf("config:\n");
	printf("  vcpus              %u\n", h->n_vcpus);
	printf("  ram                %" PRIu64 " MB\n", h->ram_mb);
	printf("  accel              %s\n", h->accel && *h->accel ? h->accel : "?");
	printf("  crew mode          %s\n", crew_name(h->crew_mode));
	if (h->crew_mode == 2 && h->user_page_crew)
		printf("  user memory        page CREW for user addresses "
		       "(byte CREW orders the kernel's memory from the switch "
		       "on)\n");
	else if (h->crew_mode == 2)	/* what a byte-mode recording assumes */
		printf("  user memory        share-nothing (byte CREW orders "
		       "kernel memory from the switch on)\n");
	if (h->qemu_version && *h->qemu_version)
		printf("  qemu               %s\n", h->qemu_version);
	if (h->tsc_khz)
		printf("  tsc                %" PRIu64 " kHz\n", h->tsc_khz);
	if (h->checkpoint_interval)
		printf("  checkpoint every   %" PRIu64 " events\n",
		       h->checkpoint_interval);
	if (h->start_time_ns) {
		time_t t = (time_t)(h->start_time_ns / 1000000000u);
		struct tm tm;
		char buf[64];
		gmtime_r(&t, &tm);
		strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
		printf("  start              %s\n", buf);
	}
	for (size_t i = 0; i < h->n_images; i++) {
		const Rr__Header__Image *im = h->images[i];
		printf("  image %-12s %s (%" PRIu64 " bytes", im->role, im->path,
		       im->size);
		if (im->sha256.len) {
			fputs(", sha256 ", stdout);
			print_hex(stdout, im->sha256.data, im->sha256.len, 32);
		}
		puts(")");
	}
	hash_line("patch series", &h->patch_series_hash);
	hash_line("guest module", &h->guest_module_hash);
	hash_line("training list", &h->training_list_hash);
	if (h->n_cmdline) {
		printf("  cmdline           ");
		for (size_t i = 0; i < h->n_cmdline; i++)
			printf(" %s", h->cmdline[i]);
		putchar('\n');
	}
}

/* Per-vCPU counters; vCPU numbers are capped so input cannot blow us up. */
#define MAX_TRACKED_VCPUS 1024

int cmd_info(int argc, char **argv)
{
	if (want_help(argc, argv, usage))
		return EXIT_OK;
	if (argc != 2 || argv[1][0] == '-') {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	const char *path = argv[1];
	rr_reader *r = open_log(path);
	if (!r)
		return EXIT_FAIL;

	uint64_t by_kind[RR_N_KINDS] = { 0 };
	uint64_t *by_vcpu = calloc(MAX_TRACKED_VCPUS, sizeof(uint64_t));
	uint64_t dev = 0, other_vcpu = 0, total = 0, payload = 0;
	uint64_t end_ns = 0, cp_ns = 0, tsc_min = UINT64_MAX, tsc_max = 0;
	uint32_t max_vcpu = 0;
	int have_end = 0, s, ret = EXIT_OK;
	uint64_t untrained = 0, upcs[8];
	uint64_t user_par = 0, user_as = 0, user_vcpus = 0, user_pc = 0;
	size_t n_upcs = 0;
	const Rr__Event *ev;
	rr_error err = { 0 };

	while ((s = rr_reader_next_ref(r, &ev, &err)) == 1) {
		total++;
		by_kind[rr_event_kind_slot(ev->body_case)]++;
		if (ev->vcpu == RR_VCPU_NONE) {
			dev++;
		} else if (ev->vcpu < MAX_TRACKED_VCPUS) {
			by_vcpu[ev->vcpu]++;
			if (ev->vcpu > max_vcpu)
				max_vcpu = ev->vcpu;
		} else {
			other_vcpu++;
		}
		switch (ev->body_case) {
		case RR__EVENT__BODY_TIME_READ:
			if (ev->time_read->kind <= RR__TIME_READ__KIND__RDTSCP) {
				uint64_t v = ev->time_read->value;
				tsc_min = v < tsc_min ? v : tsc_min;
				tsc_max = v > tsc_max ? v : tsc_max;
			}
			break;
		case RR__EVENT__BODY_DMA_WRITE:
			payload += ev->dma_write->data.len;
			break;
		case RR__EVENT__BODY_NET_PACKET:
			payload += ev->net_packet->data.len;
			break;
		case RR__EVENT__BODY_CHECKPOINT:
			cp_ns = ev->checkpoint->host_ns;
			break;
		case RR__EVENT__BODY_END:
			end_ns = ev->end->host_ns;
			have_end = 1;
			untrained = ev->end->untrained_shared;
			n_upcs = ev->end->n_untrained_pcs;
			for (size_t i = 0; i < n_upcs && i < 8; i++)
				upcs[i] = ev->end->untrained_pcs[i];
			user_par = ev->end->user_parallel;
			user_as = ev->end->user_parallel_as;
			user_vcpus = ev->end->user_parallel_vcpus;
			user_pc = ev->end->user_parallel_pc;
			break;
		default:
			break;
		}
	}
	if (s < 0) {
		fprintf(stderr, "replay-vm: %s: %s\n", path, err.msg);
		ret = EXIT_FAIL;
	}

	const Rr__Header *h = rr_reader_header(r);
	const rr_chunk_info *ch;
	int64_t nc = rr_reader_chunks(r, &ch, &err);
	uint64_t raw = 0, comp = 0;
	for (int64_t i = 0; i < nc; i++) {
		raw += ch[i].raw_len;
		comp += ch[i].comp_len;
	}
	uint64_t fsize = rr_reader_file_size(r);

	printf("%s: run.rr format %u, %s, %s\n", path, h->format_version,
	       human_bytes(fsize, 0),
	       rr_reader_has_footer(r) ? "closed cleanly (index + footer)" :
	       "NOT closed (no footer)");
	if (rr_reader_warning(r))
		printf("WARNING: %s\n", rr_reader_warning(r));
	print_header(h);

	/* Duration: host clock if recorded, else TSC. */
	double dur = 0;
	const char *dur_src = NULL;
	if (end_ns) {
		dur = end_ns / 1e9;
		dur_src = "End event host time";
	} else if (cp_ns) {
		dur = cp_ns / 1e9;
		dur_src = "last checkpoint host time";
	} else if (h->tsc_khz && tsc_max > tsc_min) {
		dur = (tsc_max - tsc_min) / (h->tsc_khz * 1e3);
		dur_src = "first to last TSC read";
	}
	printf("events: %" PRIu64 " in %" PRId64 " chunks%s\n", total, nc,
	       have_end ? " (ends with End)" : " (no End event)");
	printf("  by kind:\n");
	for (int k = 0; k < RR_N_KINDS; k++) {
		static const Rr__Event__BodyCase cases[RR_N_KINDS] = {
			RR__EVENT__BODY__NOT_SET, RR__EVENT__BODY_IO_READ,
			RR__EVENT__BODY_TIME_READ, RR__EVENT__BODY_INTERRUPT,
			RR__EVENT__BODY_DMA_WRITE, RR__EVENT__BODY_NET_PACKET,
			RR__EVENT__BODY_CREW_TRANSFER,
			RR__EVENT__BODY_CHECKPOINT, RR__EVENT__BODY_END,
		};
		if (by_kind[k])
			printf("    %-14s %12" PRIu64 "  %5.1f%%\n",
			       rr_event_kind_name(cases[k]), by_kind[k],
			       100.0 * by_kind[k] / total);
	}
	printf("  by vcpu:\n");
	for (uint32_t v = 0; v <= max_vcpu && total; v++)
		if (by_vcpu[v])
			printf("    vcpu %-9u %12" PRIu64 "  %5.1f%%\n", v,
			       by_vcpu[v], 100.0 * by_vcpu[v] / total);
	if (dev)
		printf("    %-14s %12" PRIu64 "  %5.1f%%\n", "device/none", dev,
		       100.0 * dev / total);
	if (other_vcpu)
		printf("    %-14s %12" PRIu64 "\n", "vcpu >= 1024", other_vcpu);

	printf("size:\n");
	printf("  raw events         %s (%.1f B/event, %s DMA/net payload)\n",
	       human_bytes(raw, 0), total ? (double)raw / total : 0.0,
	       human_bytes(payload, 1));
	printf("  compressed         %s (ratio %.2f)\n", human_bytes(comp, 0),
	       comp ? (double)raw / comp : 0.0);
	printf("  file               %s\n", human_bytes(fsize, 0));
	if (dur_src && dur > 0) {
		printf("duration: %.3f s (%s)\n", dur, dur_src);
		printf("  rate               %.0f events/s\n", total / dur);
		printf("  log growth         %.3f MB/s compressed, %.3f MB/s raw\n",
		       fsize / dur / 1e6, raw / dur / 1e6);
	} else {
		printf("duration: unknown (no End/checkpoint host time, no TSC "
		       "reads with tsc_khz)\n");
	}
	if (untrained) {
		printf("untrained accesses: %" PRIu64 " by instructions not in "
		       "the trained list to bytes another vCPU owned (logged; "
		       "their sites release without a fence); pcs:", untrained);
		for (size_t i = 0; i < n_upcs && i < 8; i++)
			printf(" 0x%" PRIx64, upcs[i]);
		printf("%s\n", n_upcs > 8 ? " ..." : "");
	}
	if (user_par)
		printf("user space: NOT share-nothing: threads of one process "
		       "(cr3 0x%" PRIx64 ") ran user code on vCPUs (mask 0x%"
		       PRIx64 ") at once, %" PRIu64 " time(s), first at pc 0x%"
		       PRIx64 " (byte CREW does not order user memory: the "
		       "replay diverges if their shared data raced; record them with --crew "
		       "byte+user)\n",
		       user_as, user_vcpus, user_par, user_pc);
	free(by_vcpu);
	rr_reader_close(r);
	return ret;
}
