/*
 * replay-vm crew-stats: CREW ownership transfers in a log, and an offline
 * estimate of how many of them were false sharing.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "util.h"

static const char usage[] =
"usage: replay-vm crew-stats LOG [--json] [--top N] [--file-bytes A:B]\n"
"\n"
"Statistics of the CREW ownership transfers (crew_transfer events) of a\n"
"multi-vCPU recording: number of transfers, transfers per second (over\n"
"the End event's host time, else the last checkpoint's), distinct pages,\n"
"read vs write acquisitions, acquisitions per vCPU, the N pages with the\n"
"most transfers (default 10), and an estimate of false sharing.\n"
"\n"
"False sharing (a page changing hands although the vCPUs touch different\n"
"bytes of it) is estimated from the bytes each page-granular transfer\n"
"logs: addr is the guest-physical byte the acquirer touched, len its\n"
"access size (page = addr & ~0xfff).  For every page the command keeps,\n"
"per vCPU, the byte range of that vCPU's last acquiring access on the\n"
"page.  A transfer is\n"
"  true sharing   when the acquirer's range overlaps the range last\n"
"                 recorded for at least one of its previous owners;\n"
"  false sharing  when it overlaps none of them;\n"
"  unknown        when it overlaps none and some previous owner has no\n"
"                 range recorded yet (e.g. the boot CPU's initial\n"
"                 ownership of every page), or when the transfer itself\n"
"                 has no byte range (logs before byte ranges were logged:\n"
"                 addr page-aligned with len 4096).\n"
"The false-sharing share is false / (false + true).\n"
"\n"
"This is an ESTIMATE: page-granular CREW sees only the accesses that\n"
"trigger transfers.  An owner's later accesses to its page (reads by a\n"
"reader, anything by the exclusive writer) cause no event, so the range\n"
"kept for it is only its first access after acquiring.  False sharing\n"
"can be over-estimated (the owner also touched the acquirer's bytes\n"
"later) or under-estimated (a one-byte overlap counts as true sharing).\n"
"Byte-granular transfers are counted but not classified.\n"
"\n"
"--file-bytes A:B counts only the events of the chunks that end after\n"
"file byte A and no later than byte B: what the recorder wrote while the\n"
"log grew from A to B bytes (sizes a benchmark noted at two moments of a\n"
"recording, e.g. a workload's start and end; the recorder writes a chunk\n"
"at least every 200 ms).  Ownership before A still counts for the\n"
"sharing estimate.  Durations and rates are then not printed: the caller\n"
"knows the time between its two moments.\n"
"\n"
"Exit status: 0 ok, 1 read error, 64 bad usage.\n"
"\n"
"examples:\n"
"  replay-vm crew-stats run.rr\n"
"  replay-vm crew-stats run.rr --json --top 5\n"
"  replay-vm crew-stats run.rr --json --file-bytes 1048576:9437184\n"
"  replay-vm synth /tmp/s.rr --events 100000 --vcpus 4 && "
"replay-vm crew-stats /tmp/s.rr\n";

#define PAGE_SIZE   4096u
#define CHUNK_HDR   40u       /* rrlog/FORMAT.md: a chunk is header + comp_len */
#define MAX_VCPUS   256u      /* ranges are kept for vCPUs below this */
#define NO_RANGE    0xffffffffu

enum { C_TRUE, C_FALSE, C_UNKNOWN };

/*
 * One page: counters, then n_vcpu ranges packed as (start << 16 | end),
 * end exclusive, NO_RANGE when none.  Open addressing, linear probing;
 * entries are `stride` bytes so the per-vCPU array sits inline.
 */
struct page {
	uint64_t pfn_plus1;           /* 0 = empty slot */
	uint64_t transfers, writes, cls[3];
	uint32_t range[];
};

struct table {
	unsigned char *slots;
	size_t cap, used, stride;
	uint32_t n_vcpu;
};

static struct page *slot_at(struct table *t, size_t i)
{
	return (struct page *)(t->slots + i * t->stride);
}

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static int table_init(struct table *t, uint32_t n_vcpu, size_t cap)
{
	t->n_vcpu = n_vcpu;
	t->stride = (sizeof(struct page) + n_vcpu * sizeof(uint32_t) + 7) & ~(size_t)7;
	t->cap = cap;
	t->used = 0;
	t->slots = calloc(cap, t->stride);
	return t->slots ? 0 : -1;
}

static struct page *table_get(struct table *t, uint64_t pfn);

static int table_grow(struct table *t)
{
	struct table n;
	if (table_init(&n, t->n_vcpu, t->cap * 2))
		return -1;
	for (size_t i = 0; i < t->cap; i++) {
		struct page *p = slot_at(t, i);
		if (p->pfn_plus1) {
			struct page *q = table_get(&n, p->pfn_plus1 - 1);
			memcpy(q, p, t->stride);
		}
	}
	free(t->slots);
	*t = n;
	return 0;
}

/* The page's entry, created (no ranges) if new; NULL when out of memory. */
static struct page *table_get(struct table *t, uint64_t pfn)
{
	if ((t->used + 1) * 4 > t->cap * 3 && table_grow(t))
		return NULL;
	size_t mask = t->cap - 1;
	for (size_t i = hash64(pfn) & mask;; i = (i + 1) & mask) {
		struct page *p = slot_at(t, i);
		if (p->pfn_plus1 == pfn + 1)
			return p;
		if (!p->pfn_plus1) {
			p->pfn_plus1 = pfn + 1;
			for (uint32_t v = 0; v < t->n_vcpu; v++)
				p->range[v] = NO_RANGE;
			t->used++;
			return p;
		}
	}
}

static int cmp_pages(const void *a, const void *b)
{
	const struct page *x = *(const struct page *const *)a;
	const struct page *y = *(const struct page *const *)b;
	if (x->transfers != y->transfers)
		return x->transfers > y->transfers ? -1 : 1;
	return x->pfn_plus1 < y->pfn_plus1 ? -1 : x->pfn_plus1 > y->pfn_plus1;
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * a / b : 0.0;
}

/* "A:B" with A <= B, two byte offsets as parse_u64 reads them */
static int parse_byte_range(const char *arg, uint64_t *a, uint64_t *b)
{
	const char *colon = strchr(arg, ':');
	char first[32];

	if (!colon || (size_t)(colon - arg) >= sizeof(first))
		goto bad;
	memcpy(first, arg, colon - arg);
	first[colon - arg] = 0;
	if (parse_u64(first, "--file-bytes start", a) ||
	    parse_u64(colon + 1, "--file-bytes end", b) || *a > *b)
		goto bad;
	return 0;
bad:
	fprintf(stderr, "replay-vm: --file-bytes %s: expected A:B, byte offsets "
		"with A <= B\n", arg);
	return -1;
}

/*
 * Event indices [*lo, *hi) of the chunks that end in file bytes (a, b]:
 * a file of size a held none of them, one of size b all of them.
 */
static int chunk_span(rr_reader *r, uint64_t a, uint64_t b, uint64_t *lo,
		      uint64_t *hi, rr_error *err)
{
	const rr_chunk_info *ch;
	int64_t n = rr_reader_chunks(r, &ch, err);

	if (n < 0)
		return -1;
	*lo = *hi = 0;
	for (int64_t i = 0; i < n; i++) {
		uint64_t end = ch[i].offset + CHUNK_HDR + ch[i].comp_len;

		if (end <= a) {
			*lo = *hi = ch[i].first_index + ch[i].count;
		} else if (end <= b) {
			*hi = ch[i].first_index + ch[i].count;
		}
	}
	return 0;
}

static void table_free_close(struct table *t, rr_reader *r)
{
	free(t->slots);
	rr_reader_close(r);
}

int cmd_crew_stats(int argc, char **argv)
{
	const char *path = NULL;
	int json = 0, ranged = 0;
	uint64_t top = 10, from_b = 0, to_b = 0;

	if (want_help(argc, argv, usage))
		return EXIT_OK;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--top") && i + 1 < argc) {
			if (parse_u64(argv[++i], "--top", &top))
				return EXIT_USAGE;
		} else if (!strcmp(argv[i], "--file-bytes") && i + 1 < argc) {
			if (parse_byte_range(argv[++i], &from_b, &to_b))
				return EXIT_USAGE;
			ranged = 1;
		} else if (argv[i][0] == '-' || path) {
			fputs(usage, stderr);
			return EXIT_USAGE;
		} else {
			path = argv[i];
		}
	}
	if (!path) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	rr_reader *r = open_log(path);
	if (!r)
		return EXIT_FAIL;
	const Rr__Header *h = rr_reader_header(r);
	uint32_t nv = h->n_vcpus ? h->n_vcpus : 1;
	if (nv > MAX_VCPUS)
		nv = MAX_VCPUS;

	struct table t;
	if (table_init(&t, nv, 1u << 14)) {
		fprintf(stderr, "replay-vm: out of memory\n");
		rr_reader_close(r);
		return EXIT_FAIL;
	}
	uint64_t n = 0, n_page = 0, n_byte = 0, writes = 0, cls[3] = { 0 };
	uint64_t no_range = 0, end_ns = 0, cp_ns = 0, events = 0;
	uint64_t byte_marks = 0, page_takes = 0, table_marks = 0, switch_ns = 0;
	uint64_t by_vcpu[MAX_VCPUS] = { 0 }, other_vcpu = 0;
	int s, ret = EXIT_OK;
	const Rr__Event *ev;
	rr_error err = { 0 };
	uint64_t lo = 0, hi = UINT64_MAX;

	if (ranged && chunk_span(r, from_b, to_b, &lo, &hi, &err)) {
		fprintf(stderr, "replay-vm: %s: %s\n", path, err.msg);
		table_free_close(&t, r);
		return EXIT_FAIL;
	}
	for (;;) {
		uint64_t idx = rr_reader_index(r);
		int in = idx >= lo && idx < hi;

		if ((s = rr_reader_next_ref(r, &ev, &err)) != 1)
			break;
		events += in;
		if (ev->body_case == RR__EVENT__BODY_END) {
			end_ns = ev->end->host_ns;
			continue;
		}
		if (ev->body_case == RR__EVENT__BODY_CHECKPOINT) {
			cp_ns = ev->checkpoint->host_ns;
			if (ev->checkpoint->crew_switch == RR__HEADER__CREW_MODE__BYTE)
				switch_ns = cp_ns;
			continue;
		}
		if (ev->body_case != RR__EVENT__BODY_CREW_TRANSFER)
			continue;
		const Rr__CrewTransfer *c = ev->crew_transfer;
		if (!c->n_prev_owners) {
			/*
			 * Byte CREW: "no transfer before this seq".  Page CREW
			 * under KVM: a take from nobody (a sole reader's
			 * upgrade), logged so that replay changes rights only
			 * through the log.  Neither moves memory between vCPUs.
			 */
			if (c->granularity == RR__CREW_TRANSFER__GRANULARITY__PAGE)
				page_takes += in;
			else
				byte_marks += in;
			continue;
		}
		if (c->granularity == RR__CREW_TRANSFER__GRANULARITY__PAGE &&
		    c->len == 0) {
			/*
			 * byte+user: a page a user walk read first, made a page
			 * table (every vCPU stopped), not a page that changed
			 * hands for an access (rrlog/FORMAT.md, "Table marks")
			 */
			table_marks += in;
			continue;
		}
		if (in) {
			n++;
			writes += c->write;
			if (ev->vcpu < MAX_VCPUS)
				by_vcpu[ev->vcpu]++;
			else
				other_vcpu++;
		}
		if (c->granularity != RR__CREW_TRANSFER__GRANULARITY__PAGE) {
			n_byte += in;
			continue;
		}

		n_page += in;
		uint64_t off = c->addr & (PAGE_SIZE - 1);
		struct page *p = table_get(&t, c->addr / PAGE_SIZE);
		if (!p) {
			fprintf(stderr, "replay-vm: out of memory\n");
			ret = EXIT_FAIL;
			break;
		}

		/* The acquirer's byte range [lo, hi) within the page. */
		int have = !(c->len == 0 || (c->len >= PAGE_SIZE && off == 0));
		uint32_t b_lo = (uint32_t)off;
		uint32_t b_hi = have ? (uint32_t)(c->len > PAGE_SIZE - off ?
						 PAGE_SIZE : off + c->len) : 0;
		int k;
		if (!have) {
			k = C_UNKNOWN;
		} else {
			int overlap = 0, unknown = 0;
			for (size_t i = 0; i < c->n_prev_owners; i++) {
				uint32_t v = c->prev_owners[i]->vcpu;
				uint32_t rg = v < nv ? p->range[v] : NO_RANGE;
				if (rg == NO_RANGE) {
					unknown = 1;
				} else if (b_lo < (rg & 0xffff) && (rg >> 16) < b_hi) {
					overlap = 1;
				}
			}
			k = overlap ? C_TRUE : unknown ? C_UNKNOWN : C_FALSE;
		}
		if (in) {
			no_range += !have;
			p->transfers++;
			p->writes += c->write;
			p->cls[k]++;
			cls[k]++;
		}
		if (ev->vcpu < nv)
			p->range[ev->vcpu] = have ? (b_lo << 16 | b_hi) : NO_RANGE;
	}
	if (s < 0) {
		fprintf(stderr, "replay-vm: %s: %s\n", path, err.msg);
		ret = EXIT_FAIL;
	}

	double dur = end_ns ? end_ns / 1e9 : cp_ns / 1e9;
	const char *dur_src = ranged ? NULL : end_ns ? "End event host time" :
			      cp_ns ? "last checkpoint host time" : NULL;
	uint64_t classified = cls[C_TRUE] + cls[C_FALSE];

	struct page **pages = malloc((t.used ? t.used : 1) * sizeof(*pages));
	size_t np = 0;
	for (size_t i = 0; pages && i < t.cap; i++)
		if (slot_at(&t, i)->transfers)
			pages[np++] = slot_at(&t, i);
	qsort(pages, np, sizeof(*pages), cmp_pages);
	if (top > np)
		top = np;

	if (json) {
		printf("{\"log\":");
		json_string(stdout, path);
		if (ranged)
			printf(",\"file_bytes\":[%" PRIu64 ",%" PRIu64 "],"
			       "\"event_range\":[%" PRIu64 ",%" PRIu64 "]",
			       from_b, to_b, lo, hi > lo ? hi : lo);
		printf(",\"vcpus\":%u,\"events\":%" PRIu64 ",\"transfers\":%" PRIu64
		       ",\"page_transfers\":%" PRIu64 ",\"byte_transfers\":%" PRIu64,
		       h->n_vcpus, events, n, n_page, n_byte);
		if (dur_src)
			printf(",\"duration_s\":%.6f,\"transfers_per_s\":%.3f",
			       dur, dur > 0 ? n / dur : 0.0);
		else
			printf(",\"duration_s\":null,\"transfers_per_s\":null");
		printf(",\"byte_marks\":%" PRIu64 ",\"page_takes\":%" PRIu64
		       ",\"table_marks\":%" PRIu64, byte_marks, page_takes,
		       table_marks);
		if (switch_ns && dur_src && dur > switch_ns / 1e9)
			printf(",\"byte_switch_s\":%.6f,\"byte_transfers_per_s\":%.3f",
			       switch_ns / 1e9, n_byte / (dur - switch_ns / 1e9));
		else
			printf(",\"byte_switch_s\":null,\"byte_transfers_per_s\":null");
		printf(",\"pages\":%zu,\"reads\":%" PRIu64 ",\"writes\":%" PRIu64
		       ",\"true_sharing\":%" PRIu64 ",\"false_sharing\":%" PRIu64
		       ",\"unknown\":%" PRIu64 ",\"no_byte_range\":%" PRIu64,
		       np, n - writes, writes, cls[C_TRUE], cls[C_FALSE],
		       cls[C_UNKNOWN], no_range);
		if (classified)
			printf(",\"false_sharing_share\":%.6f",
			       (double)cls[C_FALSE] / classified);
		else
			printf(",\"false_sharing_share\":null");
		printf(",\"by_vcpu\":{");
		for (uint32_t v = 0, first = 1; v < MAX_VCPUS; v++)
			if (by_vcpu[v]) {
				printf("%s\"%u\":%" PRIu64, first ? "" : ",", v,
				       by_vcpu[v]);
				first = 0;
			}
		printf("},\"top_pages\":[");
		for (size_t i = 0; i < top; i++) {
			const struct page *p = pages[i];
			printf("%s{\"page\":\"0x%" PRIx64 "\",\"transfers\":%" PRIu64
			       ",\"writes\":%" PRIu64 ",\"true_sharing\":%" PRIu64
			       ",\"false_sharing\":%" PRIu64 ",\"unknown\":%" PRIu64
			       "}", i ? "," : "", (p->pfn_plus1 - 1) * PAGE_SIZE,
			       p->transfers, p->writes, p->cls[C_TRUE],
			       p->cls[C_FALSE], p->cls[C_UNKNOWN]);
		}
		printf("]}\n");
	} else {
		printf("%s: %u vCPUs, %" PRIu64 " events", path, h->n_vcpus,
		       events);
		if (ranged)
			printf(" (#%" PRIu64 "..#%" PRIu64 ": the chunks written "
			       "while the file grew from %" PRIu64 " to %" PRIu64
			       " bytes)", lo, hi > lo ? hi : lo, from_b, to_b);
		putchar('\n');
		printf("transfers:        %" PRIu64 " (%" PRIu64 " page, %" PRIu64
		       " byte)\n", n, n_page, n_byte);
		if (page_takes)
			printf("takes:            %" PRIu64 " page(s) taken from "
			       "nobody (logged under KVM), not counted above\n",
			       page_takes);
		if (table_marks)
			printf("table marks:      %" PRIu64 " page(s) made page "
			       "tables (byte+user), not counted above\n",
			       table_marks);
		if (switch_ns && dur_src && dur > switch_ns / 1e9)
			printf("byte CREW:        from %.3f s on (the guest module's "
			       "switch), %.0f byte transfers/s\n", switch_ns / 1e9,
			       n_byte / (dur - switch_ns / 1e9));
		if (dur_src && dur > 0)
			printf("duration:         %.3f s (%s), %.0f transfers/s\n",
			       dur, dur_src, n / dur);
		else if (ranged)
			printf("duration:         not known for a --file-bytes "
			       "range\n");
		else
			printf("duration:         unknown (no End/checkpoint host "
			       "time)\n");
		printf("distinct pages:   %zu\n", np);
		printf("acquisitions:     %" PRIu64 " read (%.1f%%), %" PRIu64
		       " write (%.1f%%)\n", n - writes, pct(n - writes, n),
		       writes, pct(writes, n));
		printf("by vcpu:         ");
		for (uint32_t v = 0; v < MAX_VCPUS; v++)
			if (by_vcpu[v])
				printf(" %u:%" PRIu64, v, by_vcpu[v]);
		if (other_vcpu)
			printf(" >=%u:%" PRIu64, MAX_VCPUS, other_vcpu);
		putchar('\n');
		printf("sharing (estimate, page transfers; see --help):\n");
		printf("  true sharing    %12" PRIu64 "  %5.1f%%\n", cls[C_TRUE],
		       pct(cls[C_TRUE], n_page));
		printf("  false sharing   %12" PRIu64 "  %5.1f%%\n", cls[C_FALSE],
		       pct(cls[C_FALSE], n_page));
		printf("  unknown         %12" PRIu64 "  %5.1f%%", cls[C_UNKNOWN],
		       pct(cls[C_UNKNOWN], n_page));
		if (no_range)
			printf("  (%" PRIu64 " without a byte range: older log)",
			       no_range);
		putchar('\n');
		if (classified)
			printf("  false-sharing share of classified: %.1f%%\n",
			       pct(cls[C_FALSE], classified));
		if (top) {
			printf("top %" PRIu64 " pages by transfers:\n", top);
			printf("  %-18s %10s %8s %8s %8s %8s\n", "page", "transfers",
			       "writes", "true", "false", "unknown");
			for (size_t i = 0; i < top; i++) {
				const struct page *p = pages[i];
				printf("  0x%-16" PRIx64 " %10" PRIu64 " %8" PRIu64
				       " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 "\n",
				       (p->pfn_plus1 - 1) * PAGE_SIZE, p->transfers,
				       p->writes, p->cls[C_TRUE], p->cls[C_FALSE],
				       p->cls[C_UNKNOWN]);
			}
		}
	}
	free(pages);
	table_free_close(&t, r);
	return ret;
}
