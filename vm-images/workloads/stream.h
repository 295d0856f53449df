/* Producer/consumer of a deterministic message stream over any byte
 * stream fd (used by ipc and socket). */
#ifndef WL_STREAM_H
#define WL_STREAM_H
#include "common.h"

/* Write n messages of size s; returns 0 or -1 (errno set). */
int stream_produce(int fd, long n, long s);
/* Read n messages of size s; dies on error or short stream.  Returns the
 * checksum of all messages; *bytes gets the byte count. */
uint64_t stream_consume(int fd, long n, long s, long long *bytes);
/* Fork a child running stream_produce(fd, n, s); returns its pid. */
pid_t stream_fork_producer(int fd, int close_fd, long n, long s);
/* Wait for the producer child; dies unless it exited with status 0. */
void stream_wait(pid_t pid);

#endif
