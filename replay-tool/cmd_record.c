/*
 * replay-vm record: start a recording without libvirt.  The guest runner
 * (vm-images/run, next to this tool in the source tree) knows the image
 * layout and the QEMU command line; this command gives it the recording
 * options under the same names as the replay side and the domain XML.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: replay-vm record --log run.rr [--vcpus N] [--crew page|byte|byte+user]\n"
"                        (--workload NAME | --binary FILE | --cmd 'CMD')\n"
"                        [--mem MiB] [--timeout S] [--serial-log FILE]\n"
"                        [-- ARGS for the workload or binary]\n"
"\n"
"Boots the replay-vm guest image (build/image) under the patched QEMU in\n"
"record mode, runs one command in it and powers it off; the log then holds\n"
"everything needed to rerun the whole VM with 'replay-vm --log'.  With more\n"
"than one vCPU, shared memory is ordered by page-granular CREW (--crew page,\n"
"the default) or, with --crew byte, by the guest module's byte-granular CREW\n"
"for kernel memory (user space must then share nothing between threads: one\n"
"process per thread of work), or with --crew byte+user by byte CREW for the\n"
"kernel's memory and page CREW for every access to a user address (threaded\n"
"programs).  The command's output is printed; the exit\n"
"status is the command's\n"
"(124 timeout, 125 no status from the guest, 126 setup problem).\n"
"--binary packs FILE (a static executable) into an initrd kept beside the\n"
"log as LOG.initrd: the replay needs it, so move or copy the two together.\n"
"\n"
"examples:\n"
"  replay-vm record --log run.rr --vcpus 2 --workload racy_counter\n"
"  replay-vm record --log run.rr --vcpus 4 --binary ./repro -- --iterations 10\n"
"  replay-vm record --log run.rr --cmd 'cat /proc/interrupts'\n"
"  replay-vm --log run.rr                  # then replay it\n");
}

/*
 * The guest runner: vm-images/run of the source tree this binary was built
 * in (SRC/replay-tool/replay-vm), or, installed (PREFIX/bin/replay-vm),
 * PREFIX/libexec/replay-vm/run.
 */
static int find_runner(char *out, size_t n)
{
	char exe[PATH_MAX - 32];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (len < 0)
		return -1;
	exe[len] = 0;
	for (int up = 0; up < 2; up++) {
		slash = strrchr(exe, '/');
		if (!slash)
			return -1;
		*slash = 0;
	}
	snprintf(out, n, "%s/vm-images/run", exe);
	if (!access(out, X_OK))
		return 0;
	snprintf(out, n, "%s/libexec/replay-vm/run", exe);
	return access(out, X_OK);
}

int cmd_record(int argc, char **argv)
{
	char runner[PATH_MAX];
	char **args = calloc(argc + 2, sizeof(*args));
	int n = 0, have_log = 0, have_what = 0, passthrough = 0;

	if (!args)
		return 1;
	for (int i = 1; i < argc; i++) {
		if (!passthrough && (!strcmp(argv[i], "-h") ||
				     !strcmp(argv[i], "--help"))) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--"))
			passthrough = 1;
		if (!passthrough && (!strcmp(argv[i], "--workload") ||
				     !strcmp(argv[i], "--binary") ||
				     !strcmp(argv[i], "--cmd")))
			have_what = 1;
		if (!passthrough && !strcmp(argv[i], "--log")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "replay-vm record: --log needs "
					"a file name\n");
				return 1;
			}
			have_log = 1;
			args[++n] = "--record";
			continue;
		}
		args[++n] = argv[i];
	}
	if (!have_log || !have_what) {
		fprintf(stderr, "replay-vm record: give --log FILE and what to "
			"run (--workload, --binary or --cmd)\n\n");
		usage(stderr);
		return 1;
	}
	if (find_runner(runner, sizeof(runner))) {
		fprintf(stderr, "replay-vm record: the guest runner %s is "
			"missing; run replay-vm from its source tree (make) or "
			"install it (make install)\n", runner);
		return 126;
	}
	args[0] = runner;
	fflush(NULL);
	execv(runner, args);
	fprintf(stderr, "replay-vm record: exec %s: %s\n", runner,
		strerror(errno));
	return 126;
}
