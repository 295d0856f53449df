#define vmalloc(n) malloc(n)
#define vfree(p) free(p)
