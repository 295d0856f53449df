/*
 * Test helper: write a run.rr holding the CREW transfers described on
 * stdin, for tests of `replay-vm crew-stats`.
 *
 *   crew_log OUT.rr N_VCPUS < spec
 *
 * spec lines ('#' comments and blank lines ignored):
 *   t VCPU ADDR LEN r|w PREV[,PREV...]   page-granular transfer
 *   b VCPU ADDR LEN r|w PREV[,PREV...]   byte-granular transfer
 *   e HOST_NS                            End event (duration)
 * VCPU, ADDR, LEN, PREV, HOST_NS: decimal or 0x hex.  PREV may be "-" (none).
 */
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "rrlog.h"
#include "rrlog_synth.h"

#define MAXP 64

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: crew_log OUT.rr N_VCPUS < spec\n");
		return 64;
	}
	Rr__Header h;
	rr_synth_header(&h, (uint32_t)strtoul(argv[2], NULL, 0));
	rr_error err = { 0 };
	rr_writer *w = rr_writer_open(argv[1], &h, 0, &err);
	if (!w) {
		fprintf(stderr, "crew_log: %s\n", err.msg);
		return 1;
	}
	char line[1024];
	uint64_t n = 0, seq[MAXP] = { 0 };
	int lineno = 0;
	while (fgets(line, sizeof(line), stdin)) {
		lineno++;
		char *s = line + strspn(line, " \t");
		if (*s == '#' || *s == '\n' || !*s)
			continue;
		rr_event_buf b;
		char kind, rw, prevs[512];
		unsigned long long v, addr, len;
		if (*s == 'f') {	/* end the chunk; print the file's size */
			struct stat st;

			if (rr_writer_flush(w, &err))
				goto werr;
			if (stat(argv[1], &st))
				goto werr;
			printf("%lld\n", (long long)st.st_size);
			continue;
		}
		if (*s == 'e') {
			unsigned long long ns;
			if (sscanf(s, "e %lli", &ns) != 1)
				goto bad;
			rr_pos p = { 0 };
			if (rr_writer_append(w, rr_ev_end(&b, RR_VCPU_NONE, &p, 1,
							  "test", n, ns), &err))
				goto werr;
			n++;
			continue;
		}
		if (sscanf(s, "%c %lli %lli %lli %c %511s", &kind, &v, &addr, &len,
			   &rw, prevs) != 6 || (kind != 't' && kind != 'b') ||
		    (rw != 'r' && rw != 'w') || v >= MAXP)
			goto bad;
		Rr__VcpuPos vp[MAXP], *vpp[MAXP];
		Rr__Position pp[MAXP];
		size_t np = 0;
		if (strcmp(prevs, "-")) {
			for (char *tok = strtok(prevs, ","); tok; tok = strtok(NULL, ",")) {
				unsigned long o = strtoul(tok, NULL, 0);
				if (np == MAXP || o >= MAXP)
					goto bad;
				rr_pos op = { .branches = 1000 + n, .rip = 0x1000,
					      .crew_seq = ++seq[o] };
				rr_vcpu_pos_init(&vp[np], &pp[np], (uint32_t)o, &op);
				vpp[np] = &vp[np];
				np++;
			}
		}
		rr_pos me = { .branches = 1000 + n, .rip = 0x2000, .crew_seq = ++seq[v] };
		Rr__Event *ev = rr_ev_crew_transfer(&b, (uint32_t)v, &me,
			kind == 't' ? RR__CREW_TRANSFER__GRANULARITY__PAGE
				    : RR__CREW_TRANSFER__GRANULARITY__BYTE,
			addr, len, rw == 'w', np, vpp);
		if (rr_writer_append(w, ev, &err))
			goto werr;
		n++;
	}
	if (rr_writer_close(w, &err)) {
		fprintf(stderr, "crew_log: %s\n", err.msg);
		return 1;
	}
	return 0;
bad:
	fprintf(stderr, "crew_log: stdin line %d: bad spec: %s", lineno, line);
	return 64;
werr:
	fprintf(stderr, "crew_log: %s\n", err.msg);
	return 1;
}
