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
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "rrlog.h"
#include "replay_cmdline.h"

#define EXIT_DIVERGED 3     /* QEMU's RRVM_EXIT_DIVERGED */

static void usage(FILE *f)
{
	fprintf(f,
"usage: replay-vm --log run.rr [--qemu PATH] [--timeout SECONDS] [--print-cmd]\n"
"       replay-vm replay --log run.rr ...\n"
"\n"
"Reruns a recording from power-on with every input taken from the log and\n"
"checks the register and RAM hashes at each checkpoint.  The guest's serial\n"
"console is shown as it runs.\n"
"\n"
"Exit status: 0 the replay matched the recording (up to its end, or up to\n"
"the cut of a recording that was killed); 3 it diverged (the report names\n"
"the event, the position, and what was expected and found); 2 the log or\n"
"the images are unusable; 1 any other failure.\n"
"\n"
"examples:\n"
"  replay-vm --log run.rr\n"
"  replay-vm --log run.rr --qemu build/qemu/qemu-system-x86_64\n"
"  replay-vm --log run.rr --print-cmd      # the QEMU command (shell-quoted)\n");
}

static int file_ok(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
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

int cmd_replay(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "log", required_argument, NULL, 'l' },
		{ "qemu", required_argument, NULL, 'q' },
		{ "timeout", required_argument, NULL, 't' },
		{ "print-cmd", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *log = NULL, *qemu = NULL;
	unsigned timeout = 0;
	int print_only = 0, c, status;
	char logabs[4096], why[256];
	const Rr__Header *h;
	rr_reader *r;
	rr_error err;
	char **qargv;
	char line[1024];
	int errp[2], matched = 0;
	FILE *errf;

	optind = 1;
	while ((c = getopt_long(argc, argv, "l:q:t:ph", opts, NULL)) != -1) {
		switch (c) {
		case 'l': log = optarg; break;
		case 'q': qemu = optarg; break;
		case 't': timeout = (unsigned)strtoul(optarg, NULL, 10); break;
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
	qargv = replay_argv(h, logabs, qemu, "", why, sizeof(why));
	if (!qargv) {
		fprintf(stderr, "replay-vm: cannot replay %s: %s\n", log, why);
		return 2;
	}
	for (size_t i = 0; i < h->n_images; i++) {
		if (!file_ok(h->images[i]->path)) {
			fprintf(stderr, "replay-vm: the recording's %s image %s is "
				"missing; replay needs the same file (sha256 "
				"checked)\n", h->images[i]->role,
				h->images[i]->path);
			return 2;
		}
	}
	if (access(qargv[0], X_OK)) {
		fprintf(stderr, "replay-vm: QEMU %s is not there: build it with "
			"'make qemu' or pass --qemu PATH\n", qargv[0]);
		return 2;
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

	fflush(NULL);
	if (pipe(errp)) {
		perror("replay-vm: pipe");
		return 1;
	}
	child = fork();
	if (child < 0) {
		perror("replay-vm: fork");
		return 1;
	}
	if (child == 0) {
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
	/* forward QEMU's messages, watching for its verdict */
	close(errp[1]);
	errf = fdopen(errp[0], "r");
	while (errf && fgets(line, sizeof(line), errf)) {
		fputs(line, stderr);
		if (strstr(line, "replay-vm: REPLAY OK"))
			matched = 1;
	}
	if (errf)
		fclose(errf);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "replay-vm: QEMU was killed by signal %d%s\n",
			WTERMSIG(status), timeout ? " (timeout?)" : "");
		return 1;
	}
	switch (WEXITSTATUS(status)) {
	case 0:
		if (matched)
			return 0;
		fprintf(stderr, "replay-vm: QEMU ended without a verdict\n");
		return 1;
	case EXIT_DIVERGED:
		fprintf(stderr, "replay-vm: the replay DIVERGED from the "
			"recording (report above)\n");
		return EXIT_DIVERGED;
	case 2:
		return 2;
	default:
		fprintf(stderr, "replay-vm: QEMU failed with status %d\n",
			WEXITSTATUS(status));
		return 1;
	}
}
