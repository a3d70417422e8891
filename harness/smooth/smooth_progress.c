/* smooth_progress.c -- progress lines of `arkcos smooth` on a terminal
 * (smooth_progress.h). */
#include "harness/smooth/smooth_progress.h"

#include <stdio.h>
#include <unistd.h>

#include "harness/common/util.h"

void smooth_progress_init(smooth_progress *p, int quiet, int total) {
  p->on = !quiet && isatty(STDERR_FILENO);
  p->t0 = wall_time();
  p->total = total;
  p->done = 0;
  p->map_time = 0;
  p->plan_t0 = 0;
}

void smooth_progress_plan_begin(smooth_progress *p, long long nside, const char *what) {
  if (!p->on) return;
  p->plan_t0 = wall_time();
  fprintf(stderr, "arkcos smooth: planning nside %lld (%s), elapsed %.1f s\n", nside, what,
          p->plan_t0 - p->t0);
}

void smooth_progress_plan_end(smooth_progress *p) {
  if (!p->on) return;
  const double t = wall_time();
  fprintf(stderr, "arkcos smooth: plan made in %.2f s, elapsed %.1f s\n", t - p->plan_t0, t - p->t0);
}

void smooth_progress_maps(smooth_progress *p, const char *file, int n, double dt) {
  if (!p->on) return;
  p->done += n;
  p->map_time += dt;
  const int left = p->total > p->done ? p->total - p->done : 0;
  const double expect = left * p->map_time / p->done;
  fprintf(stderr, "arkcos smooth: [%d/%d] %s: %d map%s in %.2f s, elapsed %.1f s, expected %.1f s more\n",
          p->done, p->total, file, n, n > 1 ? "s" : "", dt, wall_time() - p->t0, expect);
}
