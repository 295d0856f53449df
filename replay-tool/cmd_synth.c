/* replay-vm synth: write a synthetic log for tests and benchmarks. */
#include <getopt.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "rrlog_synth.h"
#include "util.h"

static const char usage[] =
"usage: replay-vm synth OUT.rr [--events N] [--vcpus V] [--seed S]\n"
"                       [--level L] [--dma-permille P] [--crash]\n"
"\n"
"Write a deterministic synthetic log: a multiprocessor-like mix of I/O\n"
"reads, time reads, interrupts, CREW transfers, some DMA and network\n"
"packets, and a checkpoint every 100000 events, ended by an End event.\n"
"The same options always give the same events.\n"
"\n"
"  --events N        events before End (default 100000)\n"
"  --vcpus V         1..64 (default 4)\n"
"  --seed S          generator seed (default 1)\n"
"  --level L         zstd level (default: library default)\n"
"  --dma-permille P  DMA events per 1000 (default 10)\n"
"  --crash           leave the log as a crashed recorder would: chunks\n"
"                    flushed, no End event, no index, no footer\n"
"\n"
"examples:\n"
"  replay-vm synth /tmp/run.rr --events 1000000 --vcpus 8\n"
"  replay-vm synth /tmp/crashed.rr --events 5000 --crash\n";

int cmd_synth(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "events", required_argument, NULL, 'n' },
		{ "vcpus", required_argument, NULL, 'v' },
		{ "seed", required_argument, NULL, 's' },
		{ "level", required_argument, NULL, 'l' },
		{ "dma-permille", required_argument, NULL, 'd' },
		{ "crash", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	uint64_t n = 100000, vcpus = 4, seed = 1, level = 0, dma = 10;
	int crash = 0, c;

	if (want_help(argc, argv, usage))
		return EXIT_OK;
	optind = 1;
	while ((c = getopt_long(argc, argv, "n:v:s:l:d:Ch", opts, NULL)) != -1) {
		int bad = 0;
		switch (c) {
		case 'n': bad = parse_u64(optarg, "--events", &n); break;
		case 'v': bad = parse_u64(optarg, "--vcpus", &vcpus); break;
		case 's': bad = parse_u64(optarg, "--seed", &seed); break;
		case 'l': bad = parse_u64(optarg, "--level", &level); break;
		case 'd': bad = parse_u64(optarg, "--dma-permille", &dma); break;
		case 'C': crash = 1; break;
		default: bad = 1; fputs(usage, stderr); break;
		}
		if (bad)
			return EXIT_USAGE;
	}
	if (optind != argc - 1 || vcpus < 1 || vcpus > RR_SYNTH_MAX_VCPUS ||
	    dma > 1000 || level > 22) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	const char *path = argv[optind];

	Rr__Header h;
	rr_synth s;
	rr_error err = { 0 };
	rr_synth_header(&h, (uint32_t)vcpus);
	rr_synth_init(&s, seed, (uint32_t)vcpus);
	s.dma_permille = (uint32_t)dma;
	rr_writer *w = rr_writer_open(path, &h, (int)level, &err);
	if (!w)
		goto fail;
	for (uint64_t i = 0; i < n; i++)
		if (rr_writer_append(w, rr_synth_next(&s), &err))
			goto fail;
	if (crash) {
		if (rr_writer_flush(w, &err))
			goto fail;
		/* Deliberately not closed: no index, no footer. */
		printf("%s: %" PRIu64 " events, left unclosed (crash)\n", path, n);
		return EXIT_OK;
	}
	/* ~200 ns of guest time per event, like the checkpoints say. */
	if (rr_writer_append(w, rr_synth_end(&s, n * 200), &err))
		goto fail;
	if (rr_writer_close(w, &err)) {
		w = NULL;
		goto fail;
	}
	printf("%s: %" PRIu64 " events + End\n", path, n);
	return EXIT_OK;
fail:
	fprintf(stderr, "replay-vm: %s: %s\n", path, err.msg);
	return EXIT_FAIL;
}
