#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

int want_help(int argc, char **argv, const char *usage)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage, stdout);
			return 1;
		}
	}
	return 0;
}

int parse_u64(const char *s, const char *name, uint64_t *out)
{
	char *end;
	errno = 0;
	if (!s || !*s || *s == '-')
		goto bad;
	*out = strtoull(s, &end, 0);
	if (errno || *end)
		goto bad;
	return 0;
bad:
	fprintf(stderr, "replay-vm: bad %s '%s'\n", name, s ? s : "");
	return -1;
}

rr_reader *open_log(const char *path)
{
	rr_error err = { 0 };
	rr_reader *r = rr_reader_open(path, &err);
	if (!r)
		fprintf(stderr, "replay-vm: %s: %s\n", path, err.msg);
	return r;
}

void print_hex(FILE *f, const uint8_t *p, size_t len, size_t max)
{
	size_t n = len < max ? len : max;
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
	if (n < len)
		fputs("...", f);
}

void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

const char *human_bytes(uint64_t n, int slot)
{
	static char buf[4][32];
	char *b = buf[slot & 3];
	if (n < 10000)
		snprintf(b, 32, "%llu B", (unsigned long long)n);
	else if (n < 10000000)
		snprintf(b, 32, "%.1f KB", n / 1e3);
	else if (n < 10000000000ull)
		snprintf(b, 32, "%.1f MB", n / 1e6);
	else
		snprintf(b, 32, "%.2f GB", n / 1e9);
	return b;
}
