/*
 * Progress display for replay-vm --log.  Rates are taken over the whole
 * replay so far: per-interval rates jump around too much while a guest
 * boots (DMA bursts, then long stretches of timer events).
 */
#include <string.h>
#include <time.h>

#include "progress.h"

#define BAR_WIDTH 30
#define PLAIN_EVERY_S 5.0

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void progress_init(struct progress *p, FILE *out, int tty, uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->out = out;
	p->tty = tty;
	p->total = total;
	p->t0 = now_s();
}

const char *progress_count(double n, char *buf)
{
	if (n >= 1e6)
		snprintf(buf, 24, "%.1fM", n / 1e6);
	else if (n >= 1e3)
		snprintf(buf, 24, "%.1fk", n / 1e3);
	else
		snprintf(buf, 24, "%.0f", n);
	return buf;
}

const char *progress_duration(double s, char *buf)
{
	long t = s < 0 ? 0 : s > 359999999 ? 359999999 : (long)(s + 0.5);

	if (t >= 3600)
		snprintf(buf, 24, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60,
			 t % 60);
	else
		snprintf(buf, 24, "%ld:%02ld", t / 60, t % 60);
	return buf;
}

void progress_update(struct progress *p, uint64_t done)
{
	double t = now_s(), el = t - p->t0;
	double rate = el > 0 ? done / el : 0;
	double frac = p->total ? (double)done / p->total : 0;
	char a[24], b[24], c[24], d[24];

	if (frac > 1)
		frac = 1;
	if (done == 0)
		return;         /* QEMU is still starting: no rate yet */
	if (!p->tty) {
		if (p->last_shown && t - p->last_shown < PLAIN_EVERY_S)
			return;
		p->last_shown = t;
		if (p->total)
			fprintf(p->out, "replay-vm: progress %.0f%% (%s of %s "
				"events, %s events/s, ETA %s)\n", frac * 100,
				progress_count(done, a),
				progress_count(p->total, b),
				progress_count(rate, c),
				progress_duration(rate > 0 ? (p->total - done)
						  / rate : 0, d));
		else
			fprintf(p->out, "replay-vm: progress %s events, %s "
				"events/s\n", progress_count(done, a),
				progress_count(rate, c));
		fflush(p->out);
		return;
	}
	int fill = (int)(frac * BAR_WIDTH);
	char bar[BAR_WIDTH + 1];

	for (int i = 0; i < BAR_WIDTH; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[BAR_WIDTH] = 0;
	fprintf(p->out, "\r\033[Kreplay [%s] %3.0f%%  %s/%s events  %s ev/s  "
		"ETA %s", bar, frac * 100, progress_count(done, a),
		p->total ? progress_count(p->total, b) : "?",
		progress_count(rate, c),
		p->total && rate > 0 ?
		progress_duration((p->total - done) / rate, d) : "?");
	fflush(p->out);
	p->drawn = 1;
}

void progress_clear(struct progress *p)
{
	if (p->tty && p->drawn) {
		fputs("\r\033[K", p->out);
		fflush(p->out);
		p->drawn = 0;
	}
}
