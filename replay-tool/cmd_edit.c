/*
 * replay-vm edit: copy a log with one event changed (or every byte-CREW
 * transfer's site dropped).
 *
 * For tests that must see a replay diverge exactly where a log was altered,
 * and for "what if this read had returned X" experiments.
 */
#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include "commands.h"
#include "util.h"

static const char usage[] =
"usage: replay-vm edit IN.rr OUT.rr --event N [--value V] [--addr A]\n"
"                      [--branches B] [--rip R]\n"
"       replay-vm edit IN.rr OUT.rr --strip-sites\n"
"\n"
"Copy IN.rr to OUT.rr changing event N: the value or address of an I/O\n"
"read, the value of a time/random read, the vector of an interrupt, the\n"
"address of a CREW transfer, or the logged position of any event (a byte\n"
"CREW transfer's rip is the pc of its access).  Everything else is copied\n"
"unchanged.\n"
"\n"
"--strip-sites drops the site (pc, address, length) of every byte-CREW\n"
"transfer: a smaller log whose replay no longer checks that each transfer\n"
"meets the access it was recorded at.\n"
"\n"
"examples:\n"
"  replay-vm edit run.rr bad.rr --event 5000 --value 0x1234\n"
"  replay-vm edit run.rr bad.rr --event 777 --rip 0xffffffff81000000\n";

struct change {
	int value, addr, branches, rip;
	uint64_t v_value, v_addr, v_branches, v_rip;
};

static int apply(Rr__Event *ev, const struct change *c)
{
	int done = 0;

	if (c->value) {
		if (ev->body_case == RR__EVENT__BODY_IO_READ)
			ev->io_read->value = c->v_value, done = 1;
		else if (ev->body_case == RR__EVENT__BODY_TIME_READ)
			ev->time_read->value = c->v_value, done = 1;
		else if (ev->body_case == RR__EVENT__BODY_INTERRUPT)
			ev->interrupt->vector = (uint32_t)c->v_value, done = 1;
		else
			return -1;
	}
	if (c->addr) {
		if (ev->body_case == RR__EVENT__BODY_IO_READ)
			ev->io_read->addr = c->v_addr;
		else if (ev->body_case == RR__EVENT__BODY_CREW_TRANSFER)
			ev->crew_transfer->addr = c->v_addr;
		else
			return -1;
		done = 1;
	}
	if (c->branches || c->rip) {
		if (!ev->pos)
			return -1;
		if (c->branches)
			ev->pos->branches = c->v_branches;
		if (c->rip)
			ev->pos->rip = c->v_rip;
		done = 1;
	}
	return done ? 0 : -1;
}

static void strip_site(Rr__Event *ev)
{
	if (ev->body_case != RR__EVENT__BODY_CREW_TRANSFER ||
	    ev->crew_transfer->granularity != RR__CREW_TRANSFER__GRANULARITY__BYTE)
		return;
	ev->crew_transfer->addr = 0;
	ev->crew_transfer->len = 0;
	if (ev->pos)
		ev->pos->rip = 0;
}

int cmd_edit(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "event", required_argument, NULL, 'e' },
		{ "value", required_argument, NULL, 'v' },
		{ "addr", required_argument, NULL, 'a' },
		{ "branches", required_argument, NULL, 'b' },
		{ "rip", required_argument, NULL, 'r' },
		{ "strip-sites", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct change ch = { 0 };
	uint64_t target = UINT64_MAX, i = 0;
	const char *in, *out;
	rr_reader *r;
	rr_writer *w;
	rr_error err;
	Rr__Event *ev;
	int c, s, found = 0, strip = 0;

	if (want_help(argc, argv, usage))
		return EXIT_OK;
	optind = 1;
	while ((c = getopt_long(argc, argv, "e:v:a:b:r:sh", opts, NULL)) != -1) {
		int bad = 0;

		switch (c) {
		case 'e': bad = parse_u64(optarg, "--event", &target); break;
		case 'v': bad = parse_u64(optarg, "--value", &ch.v_value); ch.value = 1; break;
		case 'a': bad = parse_u64(optarg, "--addr", &ch.v_addr); ch.addr = 1; break;
		case 'b': bad = parse_u64(optarg, "--branches", &ch.v_branches); ch.branches = 1; break;
		case 'r': bad = parse_u64(optarg, "--rip", &ch.v_rip); ch.rip = 1; break;
		case 's': strip = 1; break;
		default: bad = 1; fputs(usage, stderr); break;
		}
		if (bad)
			return EXIT_USAGE;
	}
	if (argc - optind != 2 || (target == UINT64_MAX) == !strip) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	in = argv[optind];
	out = argv[optind + 1];
	r = rr_reader_open(in, &err);
	if (!r) {
		fprintf(stderr, "replay-vm edit: %s: %s (at byte %" PRIu64 ")\n",
			in, err.msg, err.offset);
		return EXIT_FAIL;
	}
	w = rr_writer_open(out, rr_reader_header(r), 0, &err);
	if (!w) {
		fprintf(stderr, "replay-vm edit: %s: %s\n", out, err.msg);
		return EXIT_FAIL;
	}
	while ((s = rr_reader_next(r, &ev, &err)) == 1) {
		if (strip)
			strip_site(ev);
		if (i++ == target) {
			if (apply(ev, &ch) < 0) {
				fprintf(stderr, "replay-vm edit: event %" PRIu64
					" is a %s; the requested change does not "
					"apply to it\n", target,
					rr_event_kind_name(ev->body_case));
				return EXIT_FAIL;
			}
			found = 1;
		}
		if (rr_writer_append(w, ev, &err) < 0) {
			fprintf(stderr, "replay-vm edit: %s: %s\n", out, err.msg);
			return EXIT_FAIL;
		}
		rr_event_free(ev);
	}
	if (s < 0) {
		fprintf(stderr, "replay-vm edit: %s: %s (at byte %" PRIu64 ")\n",
			in, err.msg, err.offset);
		return EXIT_FAIL;
	}
	if (rr_writer_close(w, &err) < 0) {
		fprintf(stderr, "replay-vm edit: %s: %s\n", out, err.msg);
		return EXIT_FAIL;
	}
	rr_reader_close(r);
	if (!found && !strip) {
		fprintf(stderr, "replay-vm edit: %s has only %" PRIu64 " events\n",
			in, i);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}
