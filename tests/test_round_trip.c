/* test_round_trip.c — the transport's round trip from the server's side
 * (core/round_trip.c): a closed-loop client at any depth, one that goes
 * shallower, one that thinks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/round_trip.h"

#define SLOTS_MAX 64

/* A client keeping `depth` requests in flight against a server that
 * answers each in service_ns; a reply reaches the client and its next
 * request the server round_trip_ns later.  Requests start staggered.
 * Runs until `arrivals` requests have arrived, feeding rt in time order. */
struct client {
  unsigned depth;
  unsigned active;                     /* slots below it send again */
  uint64_t service_ns, round_trip_ns;
  uint64_t arrive_ns[SLOTS_MAX];       /* each slot's next arrival */
  uint64_t reply_ns[SLOTS_MAX];        /* ... or its reply, when inside */
  bool inside[SLOTS_MAX];
};

static void
client_start (struct client *c, unsigned depth, uint64_t service_ns, uint64_t round_trip_ns,
              uint64_t now_ns)
{
  *c = (struct client) { .depth = depth, .active = depth, .service_ns = service_ns,
                         .round_trip_ns = round_trip_ns };
  for (unsigned i = 0; i < depth; i++)
    c->arrive_ns[i] = now_ns + i * 1000;
}

/* Runs the client for `arrivals` arrivals; returns the time reached. */
static uint64_t
client_run (struct client *c, struct sl_round_trip *rt, unsigned arrivals)
{
  uint64_t now = 0;
  while (arrivals > 0) {
    unsigned next = 0;
    uint64_t when = UINT64_MAX;
    for (unsigned i = 0; i < c->depth; i++) {
      uint64_t t = c->inside[i] ? c->reply_ns[i] : c->arrive_ns[i];
      if (t < when) {
        when = t;
        next = i;
      }
    }
    now = when;
    if (c->inside[next]) {
      sl_round_trip_reply (rt, now);
      c->inside[next] = false;
      c->arrive_ns[next] = next < c->active ? now + c->round_trip_ns : UINT64_MAX;
    }
    else {
      sl_round_trip_request (rt, now);
      c->inside[next] = true;
      c->reply_ns[next] = now + c->service_ns;
      arrivals--;
    }
  }
  return now;
}

static void
no_estimate_before_a_reply_is_answered (void **state)
{
  (void) state;
  struct sl_round_trip rt;
  sl_round_trip_init (&rt);
  assert_false (sl_round_trip_request (&rt, 1000));
  assert_false (sl_round_trip_request (&rt, 2000));
  assert_int_equal (sl_round_trip_ns (&rt), 0);
}

static void
the_round_trip_at_every_depth (void **state)
{
  (void) state;
  static const unsigned depths[] = { 1, 4, 16, 64 };
  for (unsigned d = 0; d < sizeof depths / sizeof depths[0]; d++) {
    struct sl_round_trip rt;
    sl_round_trip_init (&rt);
    struct client c;
    client_start (&c, depths[d], 100000, 40000, 0);
    client_run (&c, &rt, 1000);
    assert_int_equal (sl_round_trip_ns (&rt), 40000);
  }
}

/* Eight slots, then four stop: their replies answer no request.  Paired
 * blindly, every later request would be matched to a reply four older. */
static void
a_client_that_goes_shallower_is_followed (void **state)
{
  (void) state;
  struct sl_round_trip rt;
  sl_round_trip_init (&rt);
  struct client c;
  client_start (&c, 8, 100000, 30000, 0);
  client_run (&c, &rt, 500);
  assert_int_equal (sl_round_trip_ns (&rt), 30000);
  c.active = 4;                /* slots 4-7 leave when their replies come */
  client_run (&c, &rt, 500);
  assert_int_equal (sl_round_trip_ns (&rt), 30000);
}

/* A client that waits 5 ms between requests is thinking: its gaps are not
 * the transport's, and the estimate keeps the last one that was. */
static void
a_thinking_client_is_not_transport (void **state)
{
  (void) state;
  struct sl_round_trip rt;
  sl_round_trip_init (&rt);
  struct client c;
  client_start (&c, 1, 100000, 25000, 0);
  uint64_t now = client_run (&c, &rt, 200);
  assert_int_equal (sl_round_trip_ns (&rt), 25000);
  client_start (&c, 1, 100000, 5000000, now + 5000000);
  client_run (&c, &rt, 200);
  assert_int_equal (sl_round_trip_ns (&rt), 25000);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (no_estimate_before_a_reply_is_answered),
    cmocka_unit_test (the_round_trip_at_every_depth),
    cmocka_unit_test (a_client_that_goes_shallower_is_followed),
    cmocka_unit_test (a_thinking_client_is_not_transport),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
