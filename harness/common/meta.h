/*
 * meta.h -- hardware and software metadata recorded with every run
 * (results.json "meta") and printed by `arkcos info`.
 *
 * Nothing here fails: what cannot be found is recorded as "unknown" (or
 * "none" for CUDA parts of a build without CUDA), so that a results file
 * always has every key.
 */
#ifndef ARKCOS_HARNESS_META_H
#define ARKCOS_HARNESS_META_H

#include <jansson.h>
#include <stdio.h>

/* A new object with date, command (argv joined with shell quoting),
 * git_commit, git_dirty (the commit the engine was built from and whether its
 * tracked files had local changes, fixed at build time: arkcos_build_commit,
 * "unknown" and null for a tree without git history), host, cpu_model, cores, memory_bytes, os, compiler,
 * cflags, versions {arkcos, fftw, libsharp, cfitsio, jansson, cuda_runtime,
 * cuda_driver, cufft}, gpus [{name, sm_count, memory_bytes, clock_khz,
 * memory_clock_khz, compute_capability}]. The caller adds "config". */
json_t *meta_collect(int argc, char **argv);

/* The current time in UTC: ISO 8601 ("2024-05-01T12:00:00Z") when compact
 * is 0, "20240501T120000Z" (for folder names) when 1. */
void meta_utc_time(char *buf, size_t len, int compact);

/* Writes a human-readable rendering of a meta object. */
void meta_print(FILE *f, const json_t *meta);

#endif
