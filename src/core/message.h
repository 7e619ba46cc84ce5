/*
 * message.h — perfvar's one-line messages to the user on stderr: "perfvar: ..." for what holds for
 * the whole job (printed by rank 0 only), "perfvar: rank N: ..." for what one rank saw (internal).
 * Thread-safe (one fprintf per message); the rank is set once, at the start, before any thread but
 * the starting one prints.
 */
#ifndef PV_MESSAGE_H
#define PV_MESSAGE_H

/* This process's rank in the job (0 until set: a process on its own is rank 0). */
void pv_message_set_rank(int rank);

/* Print "perfvar: ..." on stderr; with rank0_only, only rank 0 prints it (once per job). */
void pv_message(int rank0_only, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
