#include <stdint.h>
static inline size_t array_size(size_t a, size_t b)
{
	size_t r;

	return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}
