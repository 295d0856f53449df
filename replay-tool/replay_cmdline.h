#ifndef REPLAY_CMDLINE_H
#define REPLAY_CMDLINE_H

#include "rrlog.h"

/*
 * argv for QEMU replaying @log (NULL-terminated), from @h's recorded command
 * line; @qemu replaces the binary when not NULL; @rr_extra is appended to the
 * -rr replay option (",until=N", or ""). NULL with the reason in @why.
 */
char **replay_argv(const Rr__Header *h, const char *log, const char *qemu,
		   const char *rr_extra, char *why, size_t whylen);

/*
 * Where the replay finds an image the recording used at @recorded: there,
 * or else under the same name in the directory of @log (images the
 * recording made beside its log, such as the initrd packing a --binary,
 * travel with it).  Returns @recorded, or @buf filled with the other path,
 * or NULL when neither is a regular file.
 */
const char *replay_image_path(const char *recorded, const char *log,
			      char *buf, size_t len);

/*
 * Makes every argument of @argv that names @from (the whole argument, or a
 * value in "k=@from,..." or "\"k\":\"@from\"") name @to instead.  Returns the
 * number of arguments changed, -1 when out of memory.
 */
int replay_argv_subst(char **argv, const char *from, const char *to);

#endif
