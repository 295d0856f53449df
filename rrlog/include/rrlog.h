/*
 * rrlog: writer and reader for run.rr replay logs.
 *
 * One C11 library shared by the QEMU recorder, the replayer and the
 * replay-vm tool.  The record schema is proto/rr.proto (protobuf-c types
 * Rr__*); the container around it is described in rrlog/FORMAT.md.
 *
 * Build flags: -I rrlog/include -I rrlog/gen, link rrlog/librrlog.a
 * -lprotobuf-c -lzstd -lpthread (see rrlog/rrlog.mk).
 *
 * Conventions:
 *  - functions returning int give 0 on success and -1 on error, except
 *    rr_reader_next (1/0/-1);
 *  - every failing call fills the rr_error passed to it (which may be
 *    NULL), naming the byte offset in the file and what was wrong.
 */
#ifndef RRLOG_H
#define RRLOG_H

#include <stddef.h>
#include <stdint.h>

#include "rr.pb-c.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Container version written into the file header; see FORMAT.md. */
#define RR_FORMAT_VERSION 1u

/* Event.vcpu for events that belong to no vCPU (device DMA, net, end). */
#define RR_VCPU_NONE 0xffffffffu

/* Upper bounds enforced on read (and on write, so logs stay readable). */
#define RR_MAX_CHUNK_RAW   (64u << 20)  /* decompressed chunk payload */
#define RR_MAX_HEADER_LEN  (1u << 20)   /* packed Rr__Header */

typedef struct rr_error {
	char msg[256];
	uint64_t offset;   /* byte offset in the file the error refers to */
} rr_error;

typedef struct rr_writer rr_writer;
typedef struct rr_reader rr_reader;

/* ---- writing ---------------------------------------------------------- */

typedef struct rr_writer_opts {
	int zstd_level;            /* 0: RR_DEFAULT_ZSTD_LEVEL; 1..19, or
	                              negative for zstd fast levels */
	uint32_t chunk_raw_bytes;  /* 0: 256 KiB; end a chunk at this size */
	uint32_t flush_ms;         /* 0: 1000; end a chunk older than this,
	                              checked on append */
	int fsync;                 /* fdatasync after every chunk written */
} rr_writer_opts;

#define RR_DEFAULT_ZSTD_LEVEL 1

/*
 * Create path (truncating it) and write the file header.  hdr->format_version
 * is ignored: the library writes RR_FORMAT_VERSION.
 */
rr_writer *rr_writer_open(const char *path, const Rr__Header *hdr,
			  int zstd_level /* 0 = default */, rr_error *err);
rr_writer *rr_writer_open_opts(const char *path, const Rr__Header *hdr,
			       const rr_writer_opts *opts, rr_error *err);

/*
 * Append one event.  Thread-safe: events get consecutive global indices in
 * the order the calls take the writer's lock, so the order of events
 * appended by one thread is preserved, and an event appended after another
 * call returned comes after it.
 */
int rr_writer_append(rr_writer *w, const Rr__Event *ev, rr_error *err);

/* Same, and store the event's global index in *index. */
int rr_writer_append_idx(rr_writer *w, const Rr__Event *ev, uint64_t *index,
			 rr_error *err);

/* End the current chunk and write it out (fdatasync if opts.fsync). */
int rr_writer_flush(rr_writer *w, rr_error *err);

/*
 * Flush, write the index chunk and the footer, close and free w (also on
 * error).  Does not append an End event: do that first.
 */
int rr_writer_close(rr_writer *w, rr_error *err);

/* Events appended so far. */
uint64_t rr_writer_count(rr_writer *w);

/* ---- reading ---------------------------------------------------------- */

/*
 * A reader is not thread-safe: use one per thread (they are cheap: one
 * chunk of buffers each).  Readers never modify the file.
 */

rr_reader *rr_reader_open(const char *path, rr_error *err);

/* Read a log held in memory; buf must outlive the reader. */
rr_reader *rr_reader_open_mem(const void *buf, size_t len, rr_error *err);

void rr_reader_close(rr_reader *r);

const Rr__Header *rr_reader_header(rr_reader *r);

/*
 * Next event, in global index order.
 * Returns 1 with *ev set (caller frees it with rr_event_free), 0 at the
 * end of the log, -1 on error (corrupt or unreadable data).  At the end of a
 * log whose footer is missing (crashed recording) it returns 0 and
 * rr_reader_truncated() gives the offset where the complete prefix ends.
 */
int rr_reader_next(rr_reader *r, Rr__Event **ev, rr_error *err);

/*
 * Faster variant for bulk scans: *ev is owned by the reader, allocated from
 * an arena, and valid only until the next call on r.  Do not free it.
 */
int rr_reader_next_ref(rr_reader *r, const Rr__Event **ev, rr_error *err);

/*
 * Skip to global event index `index` (the next event read has that index).
 * Reads the index and decompresses one chunk; on a log with no footer it
 * scans chunk headers.  Seeking to rr_reader_count() positions at the end.
 */
int rr_reader_seek(rr_reader *r, uint64_t index, rr_error *err);

/* Global index of the event the next rr_reader_next returns. */
uint64_t rr_reader_index(rr_reader *r);

/*
 * Number of events in the log, from the index; on a log without footer,
 * counting chunk headers (cheap, no decompression).  -1 with err on error.
 */
int64_t rr_reader_count(rr_reader *r, rr_error *err);

/*
 * -1 if the log is complete (or the end has not been reached yet),
 * otherwise the byte offset where the readable prefix ends.
 */
int64_t rr_reader_truncated(rr_reader *r);

/* Human-readable truncation warning ("truncated at byte N: ..."), or NULL. */
const char *rr_reader_warning(rr_reader *r);

/* Whether the log has a valid index + footer (closed cleanly). */
int rr_reader_has_footer(rr_reader *r);

/* Per-chunk information, for tools (info, verify). */
typedef struct rr_chunk_info {
	uint64_t offset;       /* of the chunk header */
	uint64_t first_index;
	uint32_t count;
	uint32_t raw_len;
	uint32_t comp_len;
} rr_chunk_info;

/*
 * Fill the chunk list (complete chunks only, in file order); *chunks is
 * owned by the reader.  Returns the number of chunks or -1.
 */
int64_t rr_reader_chunks(rr_reader *r, const rr_chunk_info **chunks,
			 rr_error *err);

/* File header size and total file size in bytes. */
uint64_t rr_reader_data_offset(rr_reader *r);
uint64_t rr_reader_file_size(rr_reader *r);

/*
 * Check the whole file: header, every chunk checksum and length, every
 * record, index/footer consistency.  Independent of the read position.
 * Returns 0 if fine (a truncated log is "fine" but reported through
 * rr_reader_truncated), -1 with the first problem in err.
 */
int rr_reader_verify(rr_reader *r, rr_error *err);

/* ---- events ----------------------------------------------------------- */

void rr_event_free(Rr__Event *ev);

/* "io_read", "time_read", ..., "none" for an unset body. */
const char *rr_event_kind_name(Rr__Event__BodyCase c);

/* Dense number 0..RR_N_KINDS-1 for a body case (0 = none), for counters. */
#define RR_N_KINDS 9
int rr_event_kind_slot(Rr__Event__BodyCase c);

/*
 * Stack-friendly event building without protobuf boilerplate:
 *
 *     rr_event_buf b;
 *     rr_pos p = { .branches = n, .rip = rip };
 *     rr_writer_append(w, rr_ev_io_read(&b, 0, &p, RR__IO_READ__SPACE__PIO,
 *                                       0x3f8, 1, 0x41), &err);
 *
 * The returned pointer points into b; data pointers are borrowed, not
 * copied.  pos may be NULL (position not recorded).
 */
typedef struct rr_pos {
	uint64_t branches, rip, rcx, detpoints, crew_seq;
} rr_pos;   /* rip unsigned here; Position.rip is sint64 on the wire */

typedef struct rr_event_buf {
	Rr__Event ev;
	Rr__Position pos;
	union {
		Rr__IoRead io_read;
		Rr__TimeRead time_read;
		Rr__Interrupt interrupt;
		Rr__DmaWrite dma_write;
		Rr__NetPacket net_packet;
		Rr__CrewTransfer crew_transfer;
		Rr__Checkpoint checkpoint;
		Rr__End end;
	} body;
} rr_event_buf;

/* Fill a Position / VcpuPos from a plain struct. */
void rr_position_set(Rr__Position *dst, const rr_pos *src);
void rr_vcpu_pos_init(Rr__VcpuPos *vp, Rr__Position *pos_storage,
		      uint32_t vcpu, const rr_pos *pos);
rr_pos rr_pos_from(const Rr__Position *p);  /* NULL -> all zero */

Rr__Event *rr_ev_io_read(rr_event_buf *b, uint32_t vcpu, const rr_pos *pos,
			 Rr__IoRead__Space space, uint64_t addr,
			 uint32_t size, uint64_t value);
Rr__Event *rr_ev_time_read(rr_event_buf *b, uint32_t vcpu, const rr_pos *pos,
			   Rr__TimeRead__Kind kind, uint64_t value,
			   uint64_t aux);
Rr__Event *rr_ev_interrupt(rr_event_buf *b, uint32_t vcpu, const rr_pos *pos,
			   Rr__Interrupt__Kind kind, uint32_t vector);
Rr__Event *rr_ev_dma_write(rr_event_buf *b, uint32_t vcpu, const rr_pos *pos,
			   uint64_t gpa, const void *data, size_t len,
			   size_t n_others, Rr__VcpuPos **others);
Rr__Event *rr_ev_net_packet(rr_event_buf *b, uint32_t vcpu, const rr_pos *pos,
			    Rr__NetPacket__Direction dir, const void *data,
			    size_t len);
Rr__Event *rr_ev_crew_transfer(rr_event_buf *b, uint32_t vcpu,
			       const rr_pos *pos,
			       Rr__CrewTransfer__Granularity gran,
			       uint64_t addr, uint64_t len, int write,
			       size_t n_prev, Rr__VcpuPos **prev_owners);
Rr__Event *rr_ev_checkpoint(rr_event_buf *b, uint32_t vcpu, const rr_pos *pos,
			    uint64_t index, size_t n_vcpus,
			    Rr__VcpuHash **vcpus, const void *ram_hash,
			    size_t ram_hash_len, uint64_t host_ns);
/*
 * n_events must be the number of events before the End event, i.e.
 * rr_writer_count() just before appending it (rr_reader_verify checks).
 * host_ns: host nanoseconds since Header.start_time_ns (gives `info` the
 * run's duration).
 */
Rr__Event *rr_ev_end(rr_event_buf *b, uint32_t vcpu, const rr_pos *pos,
		     int clean, const char *reason, uint64_t n_events,
		     uint64_t host_ns);

#ifdef __cplusplus
}
#endif
#endif /* RRLOG_H */
