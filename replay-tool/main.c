/*
 * replay-vm: front end for recording, replaying and inspecting run.rr
 * logs.  This file only dispatches; each subcommand lives in cmd_*.c.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "util.h"

#include "version.h"	/* RV_VERSION: git describe, made by the Makefile */

static const struct command commands[] = {
	{ "info",   cmd_info,   "summarize a log: config, counts, sizes, rate" },
	{ "dump",   cmd_dump,   "print events (text or JSON lines)" },
	{ "verify", cmd_verify, "check every checksum, length and the index" },
	{ "synth",  cmd_synth,  "write a synthetic log (tests, benchmarks)" },
	{ "edit",   cmd_edit,   "copy a log with one event changed (tests)" },
	{ "crew-stats", cmd_crew_stats, "CREW transfers: rate, pages, false-sharing estimate" },
	{ "replay", cmd_replay, "rerun a recording and prove it (= --log FILE)" },
	{ "record", cmd_record, "record a run of the guest image (no libvirt)" },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: replay-vm COMMAND [ARGS...]\n\ncommands:\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "  %-10s %s\n", "version", "print the version of this build");
	fprintf(f, "\n'replay-vm COMMAND --help' shows a command's options "
		"and examples.\n\nexamples:\n"
		"  replay-vm record --log run.rr --vcpus 2 --workload racy_counter\n"
		"  replay-vm --log run.rr                    # replay, verify\n"
		"  replay-vm --log run.rr --until 50000 --gdb 1234\n"
		"  replay-vm synth /tmp/run.rr --events 1000000\n"
		"  replay-vm info /tmp/run.rr\n"
		"  replay-vm dump /tmp/run.rr --from 100 --count 10 --json\n"
		"  replay-vm verify /tmp/run.rr\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		if (argc > 2) {
			/* "replay-vm help dump" == "replay-vm dump --help" */
			char help[] = "--help";
			char *hv[] = { argv[2], help, NULL };
			for (size_t i = 0; i < N_COMMANDS; i++)
				if (!strcmp(commands[i].name, argv[2]))
					return commands[i].run(2, hv);
		}
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("replay-vm %s\n", RV_VERSION);
		return EXIT_OK;
	}
	/* "replay-vm [--qemu Q ...] --log run.rr ..." is the replay command */
	if (!strncmp(argv[1], "--", 2))
		return cmd_replay(argc, argv);
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (!strcmp(commands[i].name, argv[1]))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "replay-vm: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
