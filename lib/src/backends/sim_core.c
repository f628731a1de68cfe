// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The simulated card's core (with sim_core.h): what every sim file calls on
 * the shared state: waking the card thread and the callers waiting for the
 * model, the generator's statistics, and the log of a long wait for the
 * model lock.  It sits below all the others and calls none of them, so
 * that sim_replay.c, which the card thread calls for frames, wakes that
 * thread without calling back into sim_thread.c (the layers: sim_core.h).
 */
#include "sim_core.h"

/* ---- the model lock --------------------------------------------------------- */

void sim_lock_waited(struct sim *s, uint64_t ns, const char *phase)
{
	if (ns > 300000)
		ga_log("sim: waited %llu us for the model lock (card thread: %s when the wait "
		       "began, %s now)",
		       (unsigned long long)(ns / 1000), phase,
		       __atomic_load_n(&s->phase, __ATOMIC_RELAXED));
}

/* ---- statistics and wake-ups (s->lock held) ------------------------------- */

void ga_simdev_kick(struct sim *s)
{
	s->kicked = true;
	if (s->model.events != s->seen_events) {
		s->seen_events = s->model.events;
		pthread_cond_broadcast(&s->changed);
	}
	pthread_cond_signal(&s->wake);
}

void ga_simdev_account(struct sim *s, enum ga_model_push r, bool generated)
{
	if (generated)
		s->st.generated++;
	if (r == GA_PUSH_DELIVERED) {
		s->st.delivered++;
		if (s->model.last.overflow)
			s->st.overflowed++;
	} else if (r == GA_PUSH_DROPPED || r == GA_PUSH_DIVERTED) {
		s->st.dropped++;
	}
}

void ga_simdev_stall_begin(struct sim *s, uint64_t t)
{
	if (!s->stalled) {
		s->stalled = true;
		s->stall_t0 = t;
	}
}

void ga_simdev_stall_end(struct sim *s, uint64_t t)
{
	if (s->stalled) {
		s->st.stalled_ns += t - s->stall_t0;
		s->stalled = false;
	}
}
