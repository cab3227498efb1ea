// Package retrypolicy states a retry budget once, as a value, for every
// decorator that retries: handlers/retry (in-process back-off between runs of a
// batch) and handlers/deadletter (republish with x-acemq-attempt+1, in the
// process or through a broker-side rung).
//
// # The model
//
// A Policy answers four questions about a message whose handling failed:
//
//   - May it be tried again? MaxAttempts counts every attempt, the first
//     delivery included, so Fixed(3, d) handles a message at most three times.
//     GiveUpAfter bounds the message's age as well; there is no default age
//     limit.
//   - How long to wait first? Schedule lists the waits without jitter: entry
//     i is the wait after attempt i+1 failed. Fixed waits the same each time;
//     Exponential doubles from its initial wait up to its maximum.
//   - Where to wait? A wait at or above the broker-wait threshold (default
//     30 s; WaitInBrokerFrom(0) means never) is held by the broker in a
//     {queue}.retry.{d} rung queue; a shorter one is held in the process, and
//     holds a prefetch slot while it lasts.
//   - How much jitter? Only waits held in the process are jittered, by up to
//     ±factor of themselves and never below zero. A broker wait is always the
//     scheduled wait: every message in a rung must share its TTL.
//
// # Attempt numbering
//
// An attempt number is the value of x-acemq-attempt on the delivery that just
// failed: 1 for the first delivery, 2 for the first retry. Delay(n, ...) and
// Decide(n, ...) describe what happens after attempt n failed and before
// attempt n+1. A number below 1 is read as 1, as a missing or zero header is.
//
// # The ladder
//
// Rungs(queue) is the set of rung queues the policy needs, computed from
// Schedule: one rung per distinct name among the waits held in the broker.
// A rung's name is written in whole seconds (Nh, Nm or Ns), so its TTL is a
// whole number of seconds too: a broker wait that is not a whole number of
// seconds is held for the next whole second up (30.5 s is held by
// {queue}.retry.31s for 31 s). Two different TTLs therefore never share a
// name, and the broker never holds a message for less than its scheduled
// wait. RungFor picks the rung for a wait: the smallest rung at least as long,
// or the longest when the wait is longer than every rung.
//
// # Invalid input
//
// Constructors and methods never panic and never return an error, so a policy
// can be written in one expression. An invalid input (a negative count or
// duration, a maximum below the initial wait, a jitter outside 0..1) is
// replaced by the nearest valid value, as each constructor documents, and
// recorded: Err reports every replacement, wrapping ErrInvalid. A decorator
// given a policy should refuse to start when Err is not nil.
//
// # The zero Policy
//
// Policy{} is "no policy stated": MaxAttempts is 0, meaning no attempt limit,
// every wait is zero, and the broker-wait threshold is the default 30 s.
// Decide retries it at once, for ever unless GiveUpAfter bounds it. IsZero
// reports it, so a decorator can tell "not configured" from None().
package retrypolicy
