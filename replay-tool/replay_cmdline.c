/*
 * The QEMU command line of a replay, made from the recording's own: the
 * record option becomes replay, and whatever connected the recorded VM to
 * the outside world (network backends, management sockets) is cut off, so
 * a replay takes every input from the log and sends nothing out.
 *
 * Recordings come from two kinds of command line: our runner's (-drive,
 * -netdev user,..., -serial stdio) and libvirt's (-S, a QMP monitor on a
 * passed socket, file descriptors passed with -add-fd, JSON -netdev and
 * -object, a serial console into a file libvirt opened).  The rules below
 * turn either into a command line that runs by itself in the foreground,
 * with the guest's console on stdout; nothing guest-visible changes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "replay_cmdline.h"

enum action {
	DROP,		/* the option (and its value) go */
	RR,		/* -rr record,... -> -rr replay,log=LOG... */
	NETDEV,		/* any network backend -> an unconnected hub port */
	CHARDEV,	/* the monitor's goes; a console -> stdio (or null) */
	OBJECT,		/* secrets read from the manager's per-domain files go */
	FWCFG,		/* the trained list: the guest's reads of it are in the log */
	DEBUGCON,	/* the recording's report file is not overwritten: null */
	MONITOR,	/* a socket monitor (the test runner's) goes: none */
};

static const struct rule {
	const char *opt;
	int has_value;
	enum action act;
} rules[] = {
	{ "-rr",		1, RR },
	{ "-netdev",		1, NETDEV },
	{ "-chardev",		1, CHARDEV },
	{ "-object",		1, OBJECT },
	{ "-S",			0, DROP },	/* libvirt starts QEMU paused */
	{ "-no-shutdown",	0, DROP },	/* a replay ends with the guest */
	{ "-daemonize",		0, DROP },	/* a replay runs in the foreground */
	{ "-mon",		1, DROP },	/* management monitors: nobody */
	{ "-qmp",		1, DROP },	/*   is there to talk to them */
	{ "-add-fd",		1, DROP },	/* the manager's fds are gone */
	{ "-pidfile",		1, DROP },
	{ "-sandbox",		1, DROP },
	{ "-msg",		1, DROP },
	{ "-runas",		1, DROP },
	{ "-fw_cfg",		1, FWCFG },
	{ "-debugcon",		1, DEBUGCON },
	{ "-monitor",		1, MONITOR },
};

static const struct rule *rule_of(const char *a)
{
	if (a[0] == '-' && a[1] == '-')
		a++;			/* QEMU takes --opt as -opt */
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
		if (!strcmp(a, rules[i].opt))
			return &rules[i];
	return NULL;
}

/* The value of KEY in "a,KEY=v,..." or {"KEY":"v",...}, malloc'd, or NULL */
static char *opt_value(const char *val, const char *key)
{
	size_t k = strlen(key), n;
	const char *p;

	if (val[0] == '{') {
		for (p = strstr(val, "\""); p; p = strstr(p + 1, "\""))
			if (!strncmp(p + 1, key, k) && !strncmp(p + 1 + k, "\":\"", 3)) {
				p += k + 4;
				n = strcspn(p, "\"");
				return strndup(p, n);
			}
		return NULL;
	}
	for (p = val; p; p = strchr(p, ',')) {
		if (*p == ',')
			p++;
		if (!strncmp(p, key, k) && p[k] == '=') {
			p += k + 1;
			return strndup(p, strcspn(p, ","));
		}
	}
	return NULL;
}

/* The backend: "user" of "user,id=n0" or of {"type":"user",...} */
static char *backend(const char *val, const char *json_key)
{
	if (val[0] == '{')
		return opt_value(val, json_key);
	return strndup(val, strcspn(val, ","));
}

static char *fmt(const char *f, const char *a, const char *b)
{
	size_t n = strlen(f) + strlen(a) + (b ? strlen(b) : 0) + 1;
	char *out = malloc(n);

	if (out)
		snprintf(out, n, f, a, b ? b : "");
	return out;
}

static const char *const SINK = "";	/* marker: drop this option */

/* "user,id=n0,..." or {"type":"tap","fd":"26","id":"n0"} -> "hubport,id=n0,hubid=0" */
static char *sink_netdev(const char *val)
{
	char *type = backend(val, "type"), *id = opt_value(val, "id"), *out;

	if (!type || !id || !strcmp(type, "hubport"))
		out = strdup(val);
	else
		out = fmt("hubport,id=%s,hubid=0%s", id, NULL);
	free(type);
	free(id);
	return out;
}

struct scan {
	char *mon_chardev[4];	/* chardevs of -mon: dropped with it */
	int n_mon;
	int stdio_taken;	/* the guest's console already on stdio */
};

static int is_mon_chardev(const struct scan *s, const char *id)
{
	for (int i = 0; i < s->n_mon; i++)
		if (!strcmp(s->mon_chardev[i], id))
			return 1;
	return 0;
}

/*
 * A character device: the monitor's goes; one that writes somewhere (a
 * file libvirt opened, a pty, a socket) becomes stdio, the first one, so
 * the console shows as the replay runs, or null.
 */
static char *console_chardev(const char *val, struct scan *s)
{
	char *type = backend(val, "backend"), *id = opt_value(val, "id"), *out;

	if (!type || !id)
		out = strdup(val);
	else if (is_mon_chardev(s, id))
		out = (char *)SINK;
	else if (!strcmp(type, "stdio") || !strcmp(type, "null"))
		out = strdup(val);
	else if (!s->stdio_taken) {
		s->stdio_taken = 1;
		out = fmt("stdio,id=%s%s", id, NULL);
	} else
		out = fmt("null,id=%s%s", id, NULL);
	free(type);
	free(id);
	return out;
}

/* libvirt's master key: a secret read from a file of the running domain */
static char *object(const char *val)
{
	char *type = backend(val, "qom-type"), *file = opt_value(val, "file");
	int drop = type && file && !strcmp(type, "secret");

	free(type);
	free(file);
	return drop ? (char *)SINK : strdup(val);
}

static void prescan(const Rr__Header *h, struct scan *s)
{
	memset(s, 0, sizeof(*s));
	for (size_t i = 1; i + 1 < h->n_cmdline; i++) {
		const char *a = h->cmdline[i], *v = h->cmdline[i + 1];
		const struct rule *r = rule_of(a);
		char *id;

		if (r && !strcmp(r->opt, "-mon") && s->n_mon < 4 &&
		    (id = opt_value(v, "chardev")))
			s->mon_chardev[s->n_mon++] = id;
		if (((r && !strcmp(r->opt, "-chardev")) ||
		     !strcmp(a, "-serial") || !strcmp(a, "-monitor")) &&
		    !strncmp(v, "stdio", 5))
			s->stdio_taken = 1;
	}
}

char **replay_argv(const Rr__Header *h, const char *log, const char *qemu,
		   const char *rr_extra, char *why, size_t whylen)
{
	char **argv = calloc(h->n_cmdline + 1, sizeof(*argv));
	size_t n = 0;
	int have_rr = 0;
	struct scan s;

	if (!argv || h->n_cmdline == 0) {
		snprintf(why, whylen, "the log's header has no QEMU command line");
		free(argv);
		return NULL;
	}
	prescan(h, &s);
	for (size_t i = 0; i < h->n_cmdline; i++) {
		const char *a = h->cmdline[i];
		const struct rule *r = i ? rule_of(a) : NULL;
		const char *v = i + 1 < h->n_cmdline ? h->cmdline[i + 1] : NULL;
		char *nv = NULL;

		if (i == 0) {
			argv[n++] = strdup(qemu ? qemu : a);
			continue;
		}
		if (!r || (r->has_value && !v)) {
			argv[n++] = strdup(a);
			continue;
		}
		i += r->has_value;
		switch (r->act) {
		case DROP:
			continue;
		case RR:
			nv = fmt("replay,log=%s%s", log, rr_extra);
			have_rr = 1;
			break;
		case NETDEV:
			nv = sink_netdev(v);
			break;
		case CHARDEV:
			nv = console_chardev(v, &s);
			break;
		case OBJECT:
			nv = object(v);
			break;
		case FWCFG:
			/*
			 * The trained list of a byte-CREW recording (issue 7): the
			 * module read it by fw_cfg DMA, a logged device write, so
			 * the replay needs no file (nor the same one).
			 */
			if (!strncmp(v, "name=opt/replayvm/trained,", 26))
				nv = strdup("name=opt/replayvm/trained,string=in-the-log");
			else
				nv = strdup(v);
			break;
		case DEBUGCON:
			nv = strdup("null");
			break;
		case MONITOR:
			/* its socket's directory went with the recording's runner */
			nv = strdup(strncmp(v, "stdio", 5) && strncmp(v, "mon:stdio", 9) ?
				    "none" : v);
			break;
		}
		if (nv == SINK)
			continue;
		argv[n++] = strdup(a);
		argv[n++] = nv;
		if (!nv || !argv[n - 2])
			break;
	}
	for (int k = 0; k < s.n_mon; k++)
		free(s.mon_chardev[k]);
	for (size_t k = 0; k < n; k++)
		if (!argv[k]) {
			snprintf(why, whylen, "out of memory");
			return NULL;
		}
	if (!have_rr) {
		snprintf(why, whylen, "the recorded command line has no -rr option");
		return NULL;
	}
	return argv;
}

static int regular_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

const char *replay_image_path(const char *recorded, const char *log,
			      char *buf, size_t len)
{
	const char *name = strrchr(recorded, '/'), *dir_end = strrchr(log, '/');
	int n;

	if (regular_file(recorded))
		return recorded;
	name = name ? name + 1 : recorded;
	if (dir_end)
		n = snprintf(buf, len, "%.*s/%s", (int)(dir_end - log), log, name);
	else
		n = snprintf(buf, len, "%s", name);
	if (n < 0 || (size_t)n >= len || !strcmp(buf, recorded))
		return NULL;
	return regular_file(buf) ? buf : NULL;
}

/* @c ends a path inside an option value */
static int path_end(char c)
{
	return c == 0 || c == ',' || c == '"';
}

/* the first place at or after @from in @s that names @path, or NULL */
static char *path_in(char *s, char *from, const char *path)
{
	size_t k = strlen(path);

	/* the path starts the argument or follows '=' or '"' */
	for (char *q = strstr(from, path); q; q = strstr(q + 1, path))
		if ((q == s || q[-1] == '=' || q[-1] == '"') && path_end(q[k]))
			return q;
	return NULL;
}

int replay_argv_subst(char **argv, const char *from, const char *to)
{
	size_t k = strlen(from), t = strlen(to);
	int changed = 0;

	if (!k)
		return 0;
	for (char **a = argv; *a; a++) {
		char *hit = path_in(*a, *a, from);

		if (hit)
			changed++;
		while (hit) {
			size_t head = hit - *a;
			char *nv = malloc(strlen(*a) - k + t + 1);

			if (!nv)
				return -1;
			memcpy(nv, *a, head);
			memcpy(nv + head, to, t);
			strcpy(nv + head + t, hit + k);
			free(*a);
			*a = nv;
			hit = path_in(nv, nv + head + t, from);
		}
	}
	return changed;
}
