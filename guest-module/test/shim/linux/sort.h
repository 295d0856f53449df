static inline void sort(void *base, size_t num, size_t size,
			int (*cmp)(const void *, const void *), void *swap)
{
	(void)swap;
	qsort(base, num, size, cmp);
}
