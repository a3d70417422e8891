/*
 * smooth_progress.h -- what `arkcos smooth` is doing, on a terminal: the
 * plans being made and each map smoothed, with the time elapsed and the
 * time expected for the maps left (their mean time so far). Lines on
 * stderr, only when stderr is a terminal and -q/--quiet was not given, so
 * that pipes, logs and scripts see nothing new.
 */
#ifndef ARKCOS_HARNESS_SMOOTH_PROGRESS_H
#define ARKCOS_HARNESS_SMOOTH_PROGRESS_H

typedef struct smooth_progress {
  int on;            /* stderr is a terminal and not --quiet */
  double t0;         /* when the command started (wall_time) */
  int total, done;   /* maps to smooth, maps smoothed */
  double map_time;   /* seconds spent smoothing the maps done */
  double plan_t0;    /* when the plan being made started */
} smooth_progress;

/* on = 0: every call below does nothing. total: maps over all inputs. */
void smooth_progress_init(smooth_progress *p, int quiet, int total);
/* "planning nside N (...)" before a plan, "plan made in S s" after it. */
void smooth_progress_plan_begin(smooth_progress *p, long long nside, const char *what);
void smooth_progress_plan_end(smooth_progress *p);
/* n maps of file (1, or 2 for a Q, U pair) smoothed in dt seconds. */
void smooth_progress_maps(smooth_progress *p, const char *file, int n, double dt);

#endif
