/*
 * The QEMU command line of a replay, made from the recording's own: the
 * record option becomes replay, and whatever connected the recorded VM to
 * the outside world (network backends, management sockets) is cut off, so
 * a replay takes every input from the log and sends nothing out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_cmdline.h"

/* "user,id=n0,..." -> "hubport,id=n0,hubid=0" */
static char *sink_netdev(const char *val)
{
	const char *id = strstr(val, "id=");
	size_t n;
	char *out;

	if (strncmp(val, "user", 4) || !id)
		return strdup(val);
	id += 3;
	n = strcspn(id, ",");
	out = malloc(n + 32);
	if (out)
		snprintf(out, n + 32, "hubport,id=%.*s,hubid=0", (int)n, id);
	return out;
}

char **replay_argv(const Rr__Header *h, const char *log, const char *qemu,
		   const char *rr_extra, char *why, size_t whylen)
{
	char **argv = calloc(h->n_cmdline + 1, sizeof(*argv));
	int have_rr = 0;

	if (!argv || h->n_cmdline == 0) {
		snprintf(why, whylen, "the log's header has no QEMU command line");
		free(argv);
		return NULL;
	}
	for (size_t i = 0; i < h->n_cmdline; i++) {
		const char *a = h->cmdline[i];
		const char *prev = i ? h->cmdline[i - 1] : "";

		if (i == 0 && qemu)
			argv[i] = strdup(qemu);
		else if (!strcmp(prev, "-rr")) {
			size_t n = strlen(log) + strlen(rr_extra) + 16;

			argv[i] = malloc(n);
			if (argv[i])
				snprintf(argv[i], n, "replay,log=%s%s", log,
					 rr_extra);
			have_rr = 1;
		} else if (!strcmp(prev, "-netdev"))
			argv[i] = sink_netdev(a);
		else
			argv[i] = strdup(a);
		if (!argv[i]) {
			snprintf(why, whylen, "out of memory");
			return NULL;
		}
	}
	if (!have_rr) {
		snprintf(why, whylen, "the recorded command line has no -rr option");
		return NULL;
	}
	return argv;
}

