/*
 * Bump allocator handed to protobuf-c so that rr_reader_next_ref decodes
 * an event without malloc: everything of one event lives in the arena and
 * is dropped wholesale before the next one.
 */
#ifndef RRLOG_ARENA_H
#define RRLOG_ARENA_H

#include <stddef.h>
#include <protobuf-c/protobuf-c.h>

struct rr_arena_block;

struct rr_arena {
	unsigned char *base;          /* main block, reused for every event */
	size_t cap, used;
	struct rr_arena_block *extra; /* overflow blocks for one large event */
	size_t extra_bytes;
	ProtobufCAllocator pbc;       /* allocator_data points at this arena */
};

void rr_arena_init(struct rr_arena *a);
void rr_arena_reset(struct rr_arena *a);   /* frees everything handed out */
void rr_arena_destroy(struct rr_arena *a);

#endif
