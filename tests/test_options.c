/*
 * test_options.c -- the one option table (harness/common/options.h): rows that
 * share a JSON key or a flag accept the same values; a command line and a
 * JSON object give the same method spec and id through the one
 * translation (method_spec_from_json, method_id); the argv parser's
 * messages name the flag and its checks are the JSON checks.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness/common/method.h"
#include "harness/common/options.h"
#include "tests/testlib.h"

/* Rows of the same key (or flag) have the same type family and range: a
 * flag accepts on the command line what its key accepts in a config. */
TEST_GROUP(same_key_same_range) {
  int pairs = 0;
  for (int i = 0; i < OPT_COUNT; i++) {
    const opt_def *a = &opt_table[i];
    CHECK(a->key && a->help && *a->help, "row %d has a key and a help line", i);
    if (a->type == OPT_T_ENUM) CHECK(a->choices && a->def, "enum row %s has choices and a default", a->key);
    for (int j = i + 1; j < OPT_COUNT; j++) {
      const opt_def *b = &opt_table[j];
      int same_key = !strcmp(a->key, b->key), same_flag = a->flag && b->flag && !strcmp(a->flag, b->flag);
      if (!same_key && !same_flag) continue;
      if (i == OPT_NAME || j == OPT_NAME) continue; /* the sweep's name, not a method's "name" */
      pairs++;
      int ta = a->type == OPT_T_INT_LIST ? OPT_T_INT : (int)a->type;
      int tb = b->type == OPT_T_INT_LIST ? OPT_T_INT : (int)b->type;
      CHECK(ta == tb, "%s: rows %d and %d differ in type", a->key, i, j);
      if (ta == OPT_T_INT || ta == OPT_T_NUM)
        CHECK(a->min == b->min && a->max == b->max && a->min_exclusive == b->min_exclusive &&
                  a->max_exclusive == b->max_exclusive,
              "%s: rows %d and %d differ in range", a->key, i, j);
      if (ta == OPT_T_ENUM) CHECK(!strcmp(a->choices, b->choices), "%s: choices differ", a->key);
    }
  }
  printf("  %d pairs of rows share a key or flag\n", pairs);
  CHECK(pairs >= 6, "the shared keys are found (%d pairs)", pairs);
  /* the ranges the issue named: one --iter, one --lmax */
  CHECK(opt_table[OPT_ITER].min == 0 && opt_table[OPT_ITER].max == 1000, "iter is 0..1000");
  CHECK(opt_table[OPT_SPECTRA_ITER].max == opt_table[OPT_ITER].max, "outputs.spectra_iter as iter");
  CHECK(opt_table[OPT_LMAX].min == 1, "lmax >= 1");
  CHECK(!strcmp(opt_table[OPT_BACKEND].def, "\"auto\""), "backend defaults to auto everywhere");
  /* --method's choices are method.h's names, in its order */
  char names[64] = "";
  for (int k = 0; k < METHOD_NKINDS; k++)
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? "|" : "", method_name((method_kind)k));
  CHECK(!strcmp(opt_table[OPT_METHOD].choices, names), "--method choices '%s', method.h '%s'",
        opt_table[OPT_METHOD].choices, names);
}

/* Runs opt_parse_argv on a NULL-terminated list; stderr goes to a file
 * whose first line lands in msg. */
static int parse(const char *const *words, const opt_arg *args, int n, json_t *vals, char *msg, size_t len) {
  char *argv[32];
  int argc = 0;
  argv[argc++] = (char *)"test";
  for (; *words; words++) argv[argc++] = (char *)*words;
  argv[argc] = NULL;
  const char *pos[4];
  int npos = 0;
  fflush(stderr);
  int saved = dup(2);
  FILE *tmp = tmpfile();
  dup2(fileno(tmp), 2);
  int rc = opt_parse_argv("test", argc, argv, args, n, vals, pos, 2, &npos);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(tmp);
  msg[0] = 0;
  if (!fgets(msg, (int)len, tmp)) msg[0] = 0;
  fclose(tmp);
  msg[strcspn(msg, "\n")] = 0;
  return rc;
}

TEST_GROUP(argv_checks_are_the_json_checks) {
  static const opt_arg args[] = {{OPT_ITER, NULL}, {OPT_LMAX, NULL}, {OPT_BACKEND, NULL}, {OPT_OUT, "-o"},
                                 {OPT_FORCE, NULL}, {OPT_THRESHOLD, NULL}};
  const int n = (int)(sizeof args / sizeof args[0]);
  char msg[512];
  struct {
    const char *words[6];
    int rc;
    const char *msg;
  } cases[] = {
      {{"--iter", "1000", NULL}, 0, ""},
      {{"--iter=1001", NULL}, 2, "test: --iter: must be <= 1000, got '1001'"},
      {{"--iter", "-1", NULL}, 2, "test: --iter: must be >= 0, got '-1'"},
      {{"--iter", "3.5", NULL}, 2, "test: --iter: '3.5' is not an integer"},
      {{"--lmax", "0", NULL}, 2, "test: --lmax: must be >= 1, got '0'"},
      {{"--lmax", "--force", NULL}, 2, "test: --lmax: needs a value"},
      {{"--backend", "tpu", NULL}, 2, "test: --backend: expected auto, cpu or gpu, got 'tpu'"},
      {{"--force", "--force", NULL}, 2, "test: --force: given twice"},
      {{"--force=1", NULL}, 2, "test: --force: takes no value"},
      {{"--bogus", NULL}, 2, "test: unknown option '--bogus'"},
      {{"a", "b", "c", NULL}, 2, "test: unexpected argument 'c'"},
      {{"-o", "", NULL}, 2, "test: --out: must be a non-empty string, got ''"},
      {{"--threshold", "15%", NULL}, 0, ""},
      {{"--help", NULL}, -1, ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    json_t *v = json_object();
    int rc = parse(cases[i].words, args, n, v, msg, sizeof msg);
    CHECK(rc == cases[i].rc && !strcmp(msg, cases[i].msg), "%s: rc %d, '%s' (want %d, '%s')",
          cases[i].words[0], rc, msg, cases[i].rc, cases[i].msg);
    json_decref(v);
  }
  /* the same row, as a config gives it: the same bound in the message */
  opt_errors e = {.len = 0, .n = 0, .file = "x.json"};
  json_t *bad = json_integer(1001);
  json_t *r = opt_check_value(&e, "methods[0].iter", &opt_table[OPT_ITER], bad);
  CHECK(!r && !strcmp(e.text, "x.json: methods[0].iter: must be <= 1000"), "JSON: '%s'", e.text);
  json_decref(bad);
  /* values parsed */
  json_t *v = json_object();
  const char *words[] = {"--threshold", "15%", "--iter", "7", "-o", "d", NULL};
  CHECK(parse(words, args, n, v, msg, sizeof msg) == 0, "parse: %s", msg);
  CHECK(fabs(opt_num(v, OPT_THRESHOLD, 0) - 0.15) < 1e-15, "15%% is 0.15");
  CHECK(opt_num(v, OPT_ITER, 0) == 7 && !strcmp(opt_str(v, OPT_OUT), "d"), "values");
  CHECK(!strcmp(opt_str(v, OPT_BACKEND), "auto") && !opt_given(v, OPT_BACKEND), "defaults from the table");
  json_decref(v);
}

/* An `arkcos smooth` command line (its rows: mask, quiet with -q, sizes,
 * the method rows) and "applies only to" from the rows' `only`. */
TEST_GROUP(smooth_ready) {
  static const opt_arg args[] = {{OPT_METHOD, NULL},     {OPT_MODE, NULL},  {OPT_ITER, NULL},
                                 {OPT_MAX_MEMORY, NULL}, {OPT_QUIET, "-q"}, {OPT_MASK, NULL},
                                 {OPT_MASK_MODE, NULL},  {OPT_KERNEL_UNIT, NULL}};
  const int n = (int)(sizeof args / sizeof args[0]);
  const char *pos[4];
  int npos = 0;
  char *argv[] = {"smooth", "in.fits", "--mask", "m.fits", "-q", "--max-memory", "8G", "--method=fsht",
                  "--iter", "0", "--kernel-unit=deg", "out.fits", NULL};
  json_t *v = json_object();
  int rc = opt_parse_argv("test", 12, argv, args, n, v, pos, 4, &npos);
  const char *mask = opt_str(v, OPT_MASK);
  CHECK(rc == 0 && npos == 2 && mask && !strcmp(mask, "m.fits"), "rc %d, %d positional, mask %s", rc, npos,
        mask ? mask : "none");
  CHECK(opt_num(v, OPT_MAX_MEMORY, 0) == 8e9 && opt_bool(v, OPT_QUIET), "8G = 8e9 bytes, -q");
  CHECK(opt_choice(v, OPT_KERNEL_UNIT) == 1 && opt_choice(v, OPT_MASK_MODE) == 0 && !opt_given(v, OPT_MASK_MODE),
        "--kernel-unit deg is choice 1; --mask-mode defaults to normalize (choice 0)");
  json_object_del(v, "max_memory"); /* arkcos only, as --mode below */
  CHECK(opt_check_applies("test", v, args, n, "fsht") == 0, "--iter applies to fsht");
  method_spec s;
  CHECK(method_spec_from_json(v, 16, &s, NULL) == 0 && s.kind == METHOD_FSHT && s.iter == 0 && s.lmax == 47,
        "a smooth command line is a method object: kind %d iter %d lmax %d", s.kind, s.iter, s.lmax);
  json_object_set_new(v, "mode", json_string("paper"));
  fflush(stderr);
  int saved = dup(2);
  FILE *tmp = tmpfile();
  dup2(fileno(tmp), 2);
  rc = opt_check_applies("test", v, args, n, "fsht");
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(tmp);
  char msg[256] = "";
  if (!fgets(msg, sizeof msg, tmp)) msg[0] = 0;
  fclose(tmp);
  CHECK(rc == 2 && !strcmp(msg, "test: --mode applies only to --method arkcos, not fsht\n"), "rc %d: %s", rc, msg);
  json_decref(v);
  v = json_object();
  char msg2[256];
  const char *bad[] = {"--max-memory", "lots", NULL};
  CHECK(parse(bad, args, n, v, msg2, sizeof msg2) == 2 &&
            !strcmp(msg2, "test: --max-memory: 'lots' is not a positive size (bytes, or with K, M, G, T)"),
        "%s", msg2);
  json_decref(v);
}

/* A command line's options and a config's method object give the same
 * spec and id: there is one translation. */
TEST_GROUP(one_translation) {
  static const opt_arg args[] = {{OPT_ITER, NULL}, {OPT_BACKEND, NULL}, {OPT_MODE, NULL},
                                 {OPT_PRECISION, NULL}, {OPT_ACCURACY, NULL}};
  char msg[256], id[256];
  json_t *cli = json_object();
  const char *words[] = {"--backend", "cpu", "--mode", "enhanced", "--accuracy", "1e-8", NULL};
  CHECK(parse(words, args, 5, cli, msg, sizeof msg) == 0, "%s", msg);
  json_object_set_new(cli, "name", json_string("arkcos"));
  method_spec a, b;
  CHECK(method_spec_from_json(cli, 16, &a, NULL) == 0, "spec from the command line");
  json_t *cfg = json_loads("{\"name\": \"arkcos\", \"backend\": \"cpu\", \"mode\": \"enhanced\", "
                           "\"precision\": \"double\", \"cache_kernel_spectra\": false, \"accuracy\": 1e-8}",
                           0, NULL);
  CHECK(method_spec_from_json(cfg, 16, &b, NULL) == 0, "spec from a config object");
  CHECK(!memcmp(&a, &b, sizeof a), "the same spec");
  CHECK(a.kind == METHOD_ARKCOS && a.arkcos.backend == ARKCOS_BACKEND_CPU &&
            a.arkcos.mode == ARKCOS_MODE_ENHANCED && a.arkcos.accuracy == 1e-8,
        "the spec's fields");
  char id2[256];
  method_id(cli, id, sizeof id);
  method_id(cfg, id2, sizeof id2);
  CHECK(!strcmp(id, id2) && !strcmp(id, "arkcos backend=cpu mode=enhanced precision=double accuracy=1e-08"),
        "ids '%s' '%s'", id, id2);
  json_decref(cli);
  /* the reused plan's direct weights: tables by default (a sweep times the
   * execute), named in the id only when another is asked */
  CHECK(b.arkcos.direct_weights == ARKCOS_WEIGHTS_TABLES, "weights default: tables (%d)", b.arkcos.direct_weights);
  static const char *const wname[] = {"auto", "fly", "lazy"};
  static const int wcode[] = {ARKCOS_WEIGHTS_AUTO, ARKCOS_WEIGHTS_ON_THE_FLY};
  for (int k = 0; k < 3; k++) {
    json_object_set_new(cfg, "weights", json_string(wname[k]));
    arkcos_error we = {0, ""};
    const int rc = method_spec_from_json(cfg, 16, &b, &we);
    if (k < 2) {
      char want[256];
      snprintf(want, sizeof want, "arkcos backend=cpu mode=enhanced precision=double weights=%s accuracy=1e-08",
               wname[k]);
      method_id(cfg, id2, sizeof id2);
      CHECK(rc == 0 && b.arkcos.direct_weights == wcode[k] && !strcmp(id2, want), "weights %s: rc %d, %d, id '%s'",
            wname[k], rc, b.arkcos.direct_weights, id2);
    } else {
      CHECK(rc == ARKCOS_EINVAL && strstr(we.msg, "weights") && strstr(we.msg, "lazy"), "weights lazy: %s", we.msg);
    }
  }
  json_decref(cfg);

  json_t *f = json_loads("{\"name\": \"fsht\", \"iter\": 0, \"lmax_factor\": 2}", 0, NULL);
  CHECK(method_spec_from_json(f, 64, &a, NULL) == 0 && a.kind == METHOD_FSHT && a.iter == 0 && a.lmax == 128,
        "fsht: iter %d lmax %d", a.iter, a.lmax);
  method_id(f, id, sizeof id);
  CHECK(!strcmp(id, "fsht iter=0 lmax_factor=2"), "fsht id '%s'", id);
  json_object_set_new(f, "lmax", json_integer(100));
  CHECK(method_spec_from_json(f, 64, &a, NULL) == 0 && a.lmax == 100, "an explicit lmax wins: %d", a.lmax);
  json_decref(f);
  f = json_loads("{\"name\": \"fsht\"}", 0, NULL);
  CHECK(method_spec_from_json(f, 64, &a, NULL) == 0 && a.iter == 3 && a.lmax == 191,
        "fsht defaults: iter %d, lmax %d = 3 nside - 1", a.iter, a.lmax);
  json_decref(f);
  f = json_loads("{\"name\": \"healpix\"}", 0, NULL);
  arkcos_error err = {0, ""};
  CHECK(method_spec_from_json(f, 64, &a, &err) == ARKCOS_EINVAL && strstr(err.msg, "healpix"), "%s", err.msg);
  json_decref(f);
  CHECK(method_lmax(2, 64) == 128 && method_lmax(3, 64) == 191 && method_lmax(1e-9, 64) == 1, "method_lmax");
}

TEST_MAIN(TG(same_key_same_range), TG(argv_checks_are_the_json_checks), TG(smooth_ready), TG(one_translation))
