#include <stdint.h>
#include <stdlib.h>

#include "arena.h"

#define ARENA_MIN (64u << 10)
#define ALIGN 16

struct rr_arena_block {
	struct rr_arena_block *next;
	size_t size;
	_Alignas(ALIGN) unsigned char data[];
};

static void *arena_alloc(void *opaque, size_t size)
{
	struct rr_arena *a = opaque;
	size_t need = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);

	if (need < size)
		return NULL;
	if (a->base && a->cap - a->used >= need) {
		void *p = a->base + a->used;
		a->used += need;
		return p;
	}
	/* Does not fit: a private block; reset() will grow the main one. */
	struct rr_arena_block *b = malloc(sizeof(*b) + need);
	if (!b)
		return NULL;
	b->next = a->extra;
	b->size = need;
	a->extra = b;
	a->extra_bytes += need;
	return b->data;
}

static void arena_free(void *opaque, void *p)
{
	(void)opaque;
	(void)p;  /* freed in bulk by rr_arena_reset */
}

void rr_arena_init(struct rr_arena *a)
{
	*a = (struct rr_arena){ 0 };
	a->pbc.alloc = arena_alloc;
	a->pbc.free = arena_free;
	a->pbc.allocator_data = a;
}

void rr_arena_reset(struct rr_arena *a)
{
	size_t want = a->used + a->extra_bytes;

	while (a->extra) {
		struct rr_arena_block *n = a->extra->next;
		free(a->extra);
		a->extra = n;
	}
	a->extra_bytes = 0;
	a->used = 0;
	/*
	 * Size the main block for the largest event seen so the steady state
	 * allocates nothing; a huge one-off event (a big DMA) is not kept.
	 */
	if (want > a->cap || !a->base) {
		size_t n = want < ARENA_MIN ? ARENA_MIN : want * 2;
		if (n > (16u << 20))
			n = want > ARENA_MIN ? ARENA_MIN : n;
		if (n > a->cap) {
			void *p;
			if (posix_memalign(&p, ALIGN, n) == 0) {
				free(a->base);
				a->base = p;
				a->cap = n;
			}
		}
	}
}

void rr_arena_destroy(struct rr_arena *a)
{
	rr_arena_reset(a);
	free(a->base);
	*a = (struct rr_arena){ 0 };
}
