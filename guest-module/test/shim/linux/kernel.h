/* userspace stand-ins for the few kernel headers sitetab.c includes */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
