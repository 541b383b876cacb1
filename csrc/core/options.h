/* The core's side of the options catalogue (csrc/core/options.c): checking every row's
 * bounds. */
#ifndef RL_OPTIONS_H
#define RL_OPTIONS_H

#include "redlease.h"

/* RL_ERR_ARGUMENT naming the first option out of its bounds ("handover_grace must be from 0 to
 * 1000 ms"), or one that contradicts another. */
rl_status rl_options_check(const rl_options *o, rl_error *err);

#endif
