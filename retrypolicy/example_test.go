package retrypolicy_test

import (
	"fmt"
	"time"

	"github.com/warrenmq/messaging/retrypolicy"
)

// An application states its retry budget once and hands the same value to
// every decorator that retries.
func Example() {
	policy := retrypolicy.Exponential(6, 10*time.Second, 5*time.Minute).
		GiveUpAfter(24 * time.Hour)
	if err := policy.Err(); err != nil {
		panic(err) // a typo in the budget is a start-up failure, not a surprise later
	}

	fmt.Println("schedule:", policy.Schedule())
	for _, rung := range policy.Rungs("orders") {
		fmt.Println("rung:", rung.Name, rung.Arguments())
	}

	firstSeen := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	now := firstSeen.Add(3 * time.Minute)
	for attempt := 1; attempt <= 6; attempt++ {
		decision := policy.Decide(attempt, firstSeen, now)
		switch {
		case !decision.Retry:
			fmt.Printf("attempt %d failed: give up, %s\n", attempt, decision.Reason)
		case decision.InBroker:
			rung, _ := policy.RungFor("orders", decision.Delay)
			fmt.Printf("attempt %d failed: wait %s in %s\n", attempt, decision.Delay, rung.Name)
		default:
			wait := policy.Delay(attempt, func() float64 { return 0.5 }) // nil in production: math/rand/v2
			fmt.Printf("attempt %d failed: wait %s in the process\n", attempt, wait)
		}
	}
	// Output:
	// schedule: [10s 20s 40s 1m20s 2m40s]
	// rung: orders.retry.40s map[x-dead-letter-exchange:acemq.retry x-dead-letter-routing-key:orders x-message-ttl:40000]
	// rung: orders.retry.80s map[x-dead-letter-exchange:acemq.retry x-dead-letter-routing-key:orders x-message-ttl:80000]
	// rung: orders.retry.160s map[x-dead-letter-exchange:acemq.retry x-dead-letter-routing-key:orders x-message-ttl:160000]
	// attempt 1 failed: wait 10s in the process
	// attempt 2 failed: wait 20s in the process
	// attempt 3 failed: wait 40s in orders.retry.40s
	// attempt 4 failed: wait 1m20s in orders.retry.80s
	// attempt 5 failed: wait 2m40s in orders.retry.160s
	// attempt 6 failed: give up, exhausted 6 attempts
}

// A threshold of zero keeps every wait in the process, and so declares no
// rung; Fixed waits are never jittered unless asked.
func ExamplePolicy_WaitInBrokerFrom() {
	policy := retrypolicy.Fixed(3, time.Minute).WaitInBrokerFrom(0)

	fmt.Println(policy.BrokerWaitThreshold(), policy.InBroker(time.Minute), len(policy.Rungs("orders")))
	fmt.Println(policy.Delay(1, nil))
	// Output:
	// 0s false 0
	// 1m0s
}

// Invalid inputs never panic: each is replaced by the nearest valid value and
// reported by Err.
func ExamplePolicy_Err() {
	policy := retrypolicy.Exponential(5, 10*time.Second, time.Second)

	fmt.Println(policy.Err())
	fmt.Println(policy.Schedule())
	// Output:
	// retrypolicy: invalid policy: Exponential: the maximum delay 1s is below the initial delay 10s; it was raised to 10s, so every wait is 10s: pass a maximum at least as long as the initial delay
	// [10s 10s 10s 10s]
}
