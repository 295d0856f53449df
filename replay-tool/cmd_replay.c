/*
 * replay-vm --log run.rr: rerun a recording deterministically.
 *
 * The log's header holds the exact QEMU command line of the recording; the
 * replay reuses it with the record option turned into replay, and the
 * network backend swapped for an unconnected hub so a replay sends nothing
 * to the outside world (the guest's received packets come from the log).
 * QEMU itself checks the images' hashes, feeds the inputs back and verifies
 * every checkpoint; this command reports its verdict.
 */
#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "rrlog.h"
#include "replay_cmdline.h"
#include "progress.h"
#include "ksyms.h"
#include "qemu_crash.h"

#define EXIT_DIVERGED 3     /* QEMU's RRVM_EXIT_DIVERGED */

static void usage(FILE *f)
{
	fprintf(f,
"usage: replay-vm --log run.rr [--until EVENT] [--gdb PORT] [--qemu PATH]\n"
"                 [--timeout SECONDS] [--no-progress] [--print-cmd]\n"
"       replay-vm replay --log run.rr ...\n"
"\n"
"Reruns a recording from power-on with every input taken from the log and\n"
"checks the register and RAM hashes at each checkpoint.  The guest's serial\n"
"console is shown as it runs; on a terminal a progress bar shows events/s\n"
"and the time left (plain progress lines every 5 s otherwise).\n"
"\n"
"  --until EVENT   stop before event number EVENT (see 'replay-vm dump'):\n"
"                  every vCPU holds still at its first event numbered EVENT\n"
"                  or more, the same point on every replay.  Alone, the\n"
"                  replay then ends with its verdict so far.\n"
"  --gdb PORT      expose QEMU's gdb stub on tcp PORT.  The VM waits for gdb\n"
"                  before its first instruction; with --until it pauses at\n"
"                  the until point for gdb (continue from there runs on to\n"
"                  the end).  Kernel symbols for gdb: build/image/kallsyms.elf\n"
"                  (see README, 'Debugging a replay').\n"
"  --timeout S     kill the replay after S seconds (exit 1)\n"
"  --print-cmd     print the QEMU command line (shell-quoted) and exit\n"
"\n"
"Exit status: 0 the replay matched the recording (up to its end, up to the\n"
"cut of a recording that was killed, or up to --until); 3 it diverged (the\n"
"report names the event, the vCPU, the expected and the found position);\n"
"2 the log or the images are unusable; 1 any other failure.\n"
"\n"
"examples:\n"
"  replay-vm --log run.rr\n"
"  replay-vm --log run.rr --until 120000             # verdict up to #120000\n"
"  replay-vm --log run.rr --gdb 1234 --until 120000  # then, elsewhere:\n"
"      gdb -ex 'target remote :1234' build/image/kallsyms.elf\n"
"  replay-vm --log run.rr --qemu build/qemu/qemu-system-x86_64\n"
"  replay-vm --log run.rr --print-cmd      # the QEMU command (shell-quoted)\n");
}

/* One argument as a POSIX shell reads it back (single quotes if needed). */
static void print_shell_word(const char *w)
{
	if (*w && strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			 "0123456789_./,=:+-@%") == strlen(w)) {
		fputs(w, stdout);
		return;
	}
	putchar('\'');
	for (; *w; w++) {
		if (*w == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*w);
	}
	putchar('\'');
}

static pid_t child;

static void on_alarm(int sig)
{
	(void)sig;
	if (child > 0)
		kill(child, SIGKILL);
}

/* argv with the gdb stub options added after the binary */
static char **with_gdb(char **qargv, const char *port)
{
	size_t n = 0;
	char **out;

	while (qargv[n])
		n++;
	out = calloc(n + 4, sizeof(*out));
	if (!out)
		return NULL;
	out[0] = qargv[0];
	out[1] = "-gdb";
	if (asprintf(&out[2], "tcp::%s", port) < 0)
		return NULL;
	out[3] = "-S";
	memcpy(out + 4, qargv + 1, n * sizeof(*out));
	return out;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	return *s && !*end && !errno && *s != '-';
}

/* kernel addresses in a divergence report, named after QEMU has gone */
#define REPORT_ADDRS 16
static uint64_t report_addr[REPORT_ADDRS];
static size_t n_report_addr;
static struct qemu_crash crash;

/*
 * Forward QEMU's messages, turning its progress lines into our display and
 * noting the kernel addresses of a divergence report.
 */
static int watch_qemu(FILE *errf, struct progress *pg, int show_progress,
		      const char *qemu)
{
	char line[1024];
	int matched = 0, in_report = 0;

	while (fgets(line, sizeof(line), errf)) {
		uint64_t n;

		if (sscanf(line, "replay-vm: progress %" SCNu64, &n) == 1) {
			if (show_progress)
				progress_update(pg, n);
			continue;
		}
		progress_clear(pg);
		fputs(line, stderr);
		qemu_crash_line(&crash, line, qemu);
		if (strstr(line, "replay-vm: REPLAY OK"))
			matched = 1;
		if (strstr(line, "replay-vm: DIVERGENCE"))
			in_report = 1;
		else if (strncmp(line, "  ", 2))
			in_report = 0;
		if (in_report)
			n_report_addr = ksyms_scan(line, report_addr, n_report_addr,
						   REPORT_ADDRS);
	}
	progress_clear(pg);
	return matched;
}

/*
 * The kernel functions of the report's addresses, from kallsyms.txt next
 * to the recording's kernel (make symbols); nothing if it is not there.
 */
static void name_report_addrs(const char *kernel)
{
	struct ksyms ks;
	char *path, *slash, buf[160];

	if (!kernel || !n_report_addr)
		return;
	path = malloc(strlen(kernel) + sizeof("/kallsyms.txt"));
	if (!path)
		return;
	strcpy(path, kernel);
	slash = strrchr(path, '/');
	strcpy(slash ? slash : path, slash ? "/kallsyms.txt" : "kallsyms.txt");
	if (!ksyms_load(&ks, path)) {
		fprintf(stderr, "replay-vm: in the kernel (%s):\n", path);
		for (size_t i = 0; i < n_report_addr; i++)
			fprintf(stderr, "  0x%016" PRIx64 " %s\n", report_addr[i],
				ksyms_format(&ks, report_addr[i], buf, sizeof(buf)));
		ksyms_free(&ks);
	}
	free(path);
}

/*
 * What the End record says about the recording's own reliability:
 * accesses by instructions a trained list missed (QEMU replay-vm/crew-byte.c,
 * record.c; patch 0021 of the old series), and
 * threads of one process that ran user code at once although byte CREW
 * took user space to share nothing (0058).  All 0 when there is no End.
 */
struct end_notes {
	uint64_t untrained, untrained_pc;
	uint64_t user_parallel, user_as, user_vcpus, user_pc;
};

static void end_notes_of(rr_reader *r, int64_t total, struct end_notes *n)
{
	const Rr__Event *ev = NULL;
	rr_error err;

	memset(n, 0, sizeof(*n));
	if (total <= 0 || rr_reader_seek(r, (uint64_t)total - 1, &err) < 0 ||
	    rr_reader_next_ref(r, &ev, &err) <= 0 || !ev ||
	    ev->body_case != RR__EVENT__BODY_END || !ev->end)
		return;
	n->untrained = ev->end->untrained_shared;
	if (ev->end->n_untrained_pcs)
		n->untrained_pc = ev->end->untrained_pcs[0];
	n->user_parallel = ev->end->user_parallel;
	n->user_as = ev->end->user_parallel_as;
	n->user_vcpus = ev->end->user_parallel_vcpus;
	n->user_pc = ev->end->user_parallel_pc;
}

static void say_user_parallel(const struct end_notes *n)
{
	fprintf(stderr, "replay-vm: note: this byte-CREW recording's user space "
		"was not share-nothing: threads of one process (cr3 0x%" PRIx64
		") ran user code on vCPUs (mask 0x%" PRIx64 ") at once, %" PRIu64
		" time(s), first at pc 0x%" PRIx64 "; byte CREW does not order "
		"user memory, so the replay diverges if their shared data "
		"raced (record such programs with --crew byte+user or page)\n",
		n->user_as, n->user_vcpus, n->user_parallel, n->user_pc);
}

int cmd_replay(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "log", required_argument, NULL, 'l' },
		{ "qemu", required_argument, NULL, 'q' },
		{ "timeout", required_argument, NULL, 't' },
		{ "until", required_argument, NULL, 'u' },
		{ "gdb", required_argument, NULL, 'g' },
		{ "no-progress", no_argument, NULL, 'n' },
		{ "print-cmd", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *log = NULL, *qemu = NULL, *gdb = NULL;
	uint64_t until = UINT64_MAX, port;
	unsigned timeout = 0;
	int print_only = 0, show_progress = 1, c, status;
	pid_t parent;
	char logabs[4096], why[256], rr_extra[96] = "";
	const Rr__Header *h;
	char moved[4096];
	char *kernel_path = NULL;	/* (the header goes with the reader) */
	rr_reader *r;
	rr_error err;
	char **qargv;
	int errp[2], matched;
	int64_t total;
	struct end_notes notes;
	struct progress pg;
	FILE *errf;

	optind = 1;
	while ((c = getopt_long(argc, argv, "l:q:t:u:g:nph", opts, NULL)) != -1) {
		switch (c) {
		case 'l': log = optarg; break;
		case 'q': qemu = optarg; break;
		case 't': timeout = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'u':
			if (!parse_u64(optarg, &until)) {
				fprintf(stderr, "replay-vm: --until wants an event "
					"number, not '%s'\n", optarg);
				return 1;
			}
			break;
		case 'g':
			if (!parse_u64(optarg, &port) || !port || port > 65535) {
				fprintf(stderr, "replay-vm: --gdb wants a TCP port "
					"(1-65535), not '%s'\n", optarg);
				return 1;
			}
			gdb = optarg;
			break;
		case 'n': show_progress = 0; break;
		case 'p': print_only = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 1;
		}
	}
	if (!log) {
		fprintf(stderr, "replay-vm: which recording? give --log run.rr\n");
		return 1;
	}
	if (!realpath(log, logabs)) {
		fprintf(stderr, "replay-vm: %s: %s\n", log, strerror(errno));
		return 2;
	}
	r = rr_reader_open(logabs, &err);
	if (!r) {
		fprintf(stderr, "replay-vm: %s is not a usable recording: %s "
			"(at byte %llu)\n", log, err.msg,
			(unsigned long long)err.offset);
		return 2;
	}
	h = rr_reader_header(r);
	total = rr_reader_count(r, &err);
	if (total < 0) {
		fprintf(stderr, "replay-vm: %s: %s (at byte %llu)\n", log,
			err.msg, (unsigned long long)err.offset);
		return 2;
	}
	end_notes_of(r, total, &notes);
	if (notes.user_parallel)
		say_user_parallel(&notes);
	if (until != UINT64_MAX && until >= (uint64_t)total) {
		fprintf(stderr, "replay-vm: --until %" PRIu64 ": %s has only "
			"%" PRId64 " events (0 to %" PRId64 ")\n", until, log,
			total, total - 1);
		return 1;
	}
	if (until != UINT64_MAX)
		snprintf(rr_extra, sizeof(rr_extra), ",until=%" PRIu64 "%s",
			 until, gdb ? ",pause=on" : "");
	if (show_progress && !print_only && !gdb)
		strcat(rr_extra, ",progress=on");
	qargv = replay_argv(h, logabs, qemu, rr_extra, why, sizeof(why));
	if (!qargv) {
		fprintf(stderr, "replay-vm: cannot replay %s: %s\n", log, why);
		return 2;
	}
	for (size_t i = 0; i < h->n_images; i++) {
		const char *rec = h->images[i]->path;
		const char *path = replay_image_path(rec, logabs, moved,
						     sizeof(moved));

		if (!path) {
			fprintf(stderr, "replay-vm: the recording's %s image %s is "
				"missing (nor is it beside the log); replay "
				"needs the same file (sha256 checked)\n",
				h->images[i]->role, rec);
			return 2;
		}
		if (path != rec && replay_argv_subst(qargv, rec, path) < 0) {
			fprintf(stderr, "replay-vm: out of memory\n");
			return 1;
		}
		if (!strcmp(h->images[i]->role, "kernel") && !kernel_path)
			kernel_path = strdup(path);
	}
	if (access(qargv[0], X_OK)) {
		fprintf(stderr, "replay-vm: QEMU %s is not there: build it with "
			"'make qemu' or pass --qemu PATH\n", qargv[0]);
		return 2;
	}
	if (gdb && !(qargv = with_gdb(qargv, gdb))) {
		fprintf(stderr, "replay-vm: out of memory\n");
		return 1;
	}
	if (print_only) {
		for (char **a = qargv; *a; a++) {
			if (a != qargv)
				putchar(' ');
			print_shell_word(*a);
		}
		printf("\n");
		return 0;
	}
	rr_reader_close(r);
	if (gdb)
		fprintf(stderr, "replay-vm: waiting for gdb on port %s; the VM "
			"starts when gdb continues:\n  gdb -ex 'target remote "
			":%s'\n", gdb, gdb);

	fflush(NULL);
	if (pipe(errp)) {
		perror("replay-vm: pipe");
		return 1;
	}
	parent = getpid();
	child = fork();
	if (child < 0) {
		perror("replay-vm: fork");
		return 1;
	}
	if (child == 0) {
		/* a replay-vm killed outright must not leave its QEMU running */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		close(errp[0]);
		dup2(errp[1], 2);
		execv(qargv[0], qargv);
		fprintf(stderr, "replay-vm: exec %s: %s\n", qargv[0],
			strerror(errno));
		_exit(127);
	}
	if (timeout) {
		signal(SIGALRM, on_alarm);
		alarm(timeout);
	}
	close(errp[1]);
	errf = fdopen(errp[0], "r");
	progress_init(&pg, stderr, isatty(2), (uint64_t)total);
	matched = errf ? watch_qemu(errf, &pg, show_progress, qargv[0]) : 0;
	if (errf)
		fclose(errf);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status)) {
		qemu_crash_resolve(&crash, qargv[0], stderr);
		fprintf(stderr, "replay-vm: QEMU was killed by signal %d%s\n",
			WTERMSIG(status), timeout && !crash.seen ? " (timeout?)" : "");
		return 1;
	}
	switch (WEXITSTATUS(status)) {
	case 0:
		if (matched)
			return 0;
		fprintf(stderr, "replay-vm: QEMU ended without a verdict\n");
		return 1;
	case EXIT_DIVERGED:
		name_report_addrs(kernel_path);
		fprintf(stderr, "replay-vm: the replay DIVERGED from the "
			"recording (report above)\n");
		if (notes.untrained)
			fprintf(stderr, "replay-vm: note: the recording had %"
				PRIu64 " access(es) by untrained instructions "
				"to shared bytes (first at pc 0x%" PRIx64 "), "
				"whose sites release without a fence: retrain "
				"(vm-images/train run) so the list covers them\n",
				notes.untrained, notes.untrained_pc);
		if (notes.user_parallel)
			say_user_parallel(&notes);
		return EXIT_DIVERGED;
	case 2:
		return 2;
	default:
		fprintf(stderr, "replay-vm: QEMU failed with status %d\n",
			WEXITSTATUS(status));
		return 1;
	}
}
