/*
 * Hand-written protobuf codec for Rr__Event, the hot path of the writer
 * and of rr_reader_next_ref.  protobuf-c's table-driven pack/unpack costs
 * 300-400 ns per small event, which alone would cap us below 3M events/s;
 * this one is specialised to proto/rr.proto and an order of magnitude
 * faster.  It is wire-identical to protobuf-c:
 *  - rr_event_encode produces exactly rr__event__pack's bytes (tests
 *    check this on every event kind and on synthetic streams);
 *  - rr_event_decode_fast accepts only canonical records (known fields,
 *    right wire types, each singular field at most once) and returns
 *    RR_DEC_FALLBACK for anything else, so the caller hands the record to
 *    protobuf-c, which stays the reference for odd but legal input and
 *    for errors.  The fuzzer checks both decoders agree.
 * KEEP IN SYNC WITH proto/rr.proto: a new field must be added here, or
 * records carrying it take the (correct, slower) fallback path.
 */
#ifndef RRLOG_CODEC_H
#define RRLOG_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "rrlog.h"

/* Upper bound of the encoded size, cheap to compute. */
size_t rr_event_encode_bound(const Rr__Event *ev);

/*
 * Encode into out (at least rr_event_encode_bound bytes); returns bytes
 * written, or 0 if this encoder cannot handle the event (unknown fields
 * attached, NULL members): use protobuf-c then.  An empty event also
 * gives 0, which protobuf-c encodes as 0 bytes too.
 */
size_t rr_event_encode(const Rr__Event *ev, uint8_t *out);

#define RR_DEC_OK        1
#define RR_DEC_FALLBACK  0

/*
 * Decode [p, p+len) into an event allocated from alloc (never freed
 * piecewise: meant for an arena).  bytes fields point into [p, p+len),
 * which must outlive the event.
 */
int rr_event_decode_fast(const uint8_t *p, size_t len,
			 ProtobufCAllocator *alloc, Rr__Event **out);

#endif
