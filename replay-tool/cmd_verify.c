/* replay-vm verify: full integrity check of a log. */
#include <inttypes.h>
#include <string.h>

#include "commands.h"
#include "util.h"

#define EXIT_TRUNCATED 2

static const char usage[] =
"usage: replay-vm verify LOG [--allow-truncated]\n"
"\n"
"Check a run.rr log end to end: file header and header record, every\n"
"chunk header, checksum (CRC32C), compressed and raw length, event count,\n"
"every record's length and protobuf encoding, the index against the\n"
"chunks, the footer, and End.n_events.\n"
"\n"
"Exit status:\n"
"  0   log is complete and intact\n"
"  1   log is corrupt; the message names the byte offset and the problem\n"
"  2   log is truncated (crashed recording): its prefix is intact, the\n"
"      message says where it ends; 0 instead with --allow-truncated\n"
"  64  bad usage\n"
"\n"
"examples:\n"
"  replay-vm verify run.rr && echo ok\n"
"  replay-vm verify --allow-truncated crashed.rr\n";

int cmd_verify(int argc, char **argv)
{
	const char *path = NULL;
	int allow_trunc = 0;

	if (want_help(argc, argv, usage))
		return EXIT_OK;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--allow-truncated"))
			allow_trunc = 1;
		else if (argv[i][0] == '-' || path) {
			fputs(usage, stderr);
			return EXIT_USAGE;
		} else
			path = argv[i];
	}
	if (!path) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}

	rr_reader *r = open_log(path);
	if (!r)
		return EXIT_FAIL;
	rr_error err = { 0 };
	const rr_chunk_info *ch;
	int ret = EXIT_OK;
	if (rr_reader_verify(r, &err)) {
		fprintf(stderr, "replay-vm: %s: CORRUPT %s\n", path, err.msg);
		ret = EXIT_FAIL;
	} else {
		int64_t nc = rr_reader_chunks(r, &ch, &err);
		int64_t n = rr_reader_count(r, &err);
		if (rr_reader_warning(r)) {
			printf("%s: TRUNCATED: %" PRId64 " events in %" PRId64
			       " chunks intact; %s\n", path, n, nc,
			       rr_reader_warning(r));
			if (!allow_trunc)
				ret = EXIT_TRUNCATED;
		} else {
			printf("%s: OK: %" PRId64 " events in %" PRId64
			       " chunks, %" PRIu64 " bytes, index and footer "
			       "consistent\n", path, n, nc,
			       rr_reader_file_size(r));
		}
	}
	rr_reader_close(r);
	return ret;
}
