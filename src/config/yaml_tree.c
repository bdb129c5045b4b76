/* yaml_tree.c -- libyaml event stream -> a small node tree that remembers the
 * 1-based line:col of every key and value. Refuses anchors and aliases (no
 * "billion laughs"), tags, duplicate keys, more than one document, and trees deeper
 * or larger than the DS_YAML_MAX_* limits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config_internal.h"
#include "dynsweep/util.h"

typedef struct {
  const char *file;
  int nodes;
  int depth;
  ds_yn *stack[DS_YAML_MAX_DEPTH + 1];
  ds_yn *root;
  int ndocs;
} yt_builder;

void ds_yaml_free(ds_yn *n) {
  if (!n) return;
  for (int i = 0; i < n->n; i++) {
    ds_yaml_free(n->item[i]);
    if (n->key) ds_yaml_free(n->key[i]);
  }
  free(n->item);
  free(n->key);
  free(n->str);
  free(n);
}

const char *ds_yaml_kind_name(const ds_yn *n) {
  if (!n) return "nothing";
  return n->kind == DS_YN_MAP ? "a map" : n->kind == DS_YN_SEQ ? "a list" : "a scalar";
}

ds_yn *ds_yaml_get(const ds_yn *m, const char *k, int *ki) {
  if (!m || m->kind != DS_YN_MAP) return NULL;
  for (int i = 0; i < m->n; i++) {
    if (strcmp(m->key[i]->str, k) == 0) {
      if (ki) *ki = i;
      return m->item[i];
    }
  }
  return NULL;
}

static int yt_fail(const yt_builder *b, yaml_mark_t m, const char *msg) {
  return ds_fail(DS_EINPUT, "%s:%d:%d: %s", b->file, (int)m.line + 1, (int)m.column + 1, msg);
}

static ds_yn *yt_new(yt_builder *b, ds_yn_kind kind, yaml_mark_t m) {
  if (b->nodes >= DS_YAML_MAX_NODES) {
    ds_fail(DS_EINPUT, "%s:%d:%d: sweep file too large: more than %d YAML nodes", b->file,
            (int)m.line + 1, (int)m.column + 1, DS_YAML_MAX_NODES);
    return NULL;
  }
  ds_yn *n = ds_calloc(1, sizeof *n);
  if (!n) return NULL;
  b->nodes++;
  n->kind = kind;
  n->line = (int)m.line + 1;
  n->col = (int)m.column + 1;
  return n;
}

/* Grows the child arrays of a SEQ/MAP by one slot. */
static int yt_grow(ds_yn *p) {
  if (p->n < p->cap) return DS_OK;
  int cap = p->cap ? p->cap * 2 : 4;
  ds_yn **item = realloc(p->item, (size_t)cap * sizeof *item);
  if (!item) return ds_fail(DS_ENOMEM, "out of memory building YAML tree");
  p->item = item;
  if (p->kind == DS_YN_MAP) {
    ds_yn **key = realloc(p->key, (size_t)cap * sizeof *key);
    if (!key) return ds_fail(DS_ENOMEM, "out of memory building YAML tree");
    p->key = key;
    for (int i = p->cap; i < cap; i++) key[i] = NULL; /* no pending key */
  }
  p->cap = cap;
  return DS_OK;
}

/* Attaches a finished node n to the container on top of the stack (or makes
 * it the root). In a map, keys and values alternate: a pending key sits in
 * key[n] with item[n] still unset. */
static int yt_attach(yt_builder *b, ds_yn *n) {
  if (b->depth == 0) {
    b->root = n;
    return DS_OK;
  }
  ds_yn *p = b->stack[b->depth - 1];
  if (p->kind == DS_YN_SEQ) {
    if (yt_grow(p) != DS_OK) {
      ds_yaml_free(n);
      return DS_ENOMEM;
    }
    p->item[p->n++] = n;
    return DS_OK;
  }
  /* map: is there a pending key? */
  if (p->cap > p->n && p->key[p->n] != NULL) {
    p->item[p->n++] = n;
    return DS_OK;
  }
  if (n->kind != DS_YN_SCALAR) {
    int rc = ds_fail(DS_EINPUT, "%s:%d:%d: map keys must be plain names, got %s", b->file,
                     n->line, n->col, ds_yaml_kind_name(n));
    ds_yaml_free(n);
    return rc;
  }
  if (p->n >= DS_YAML_MAX_KEYS) {
    int rc = ds_fail(DS_EINPUT, "%s:%d:%d: too many keys in one map (limit %d)", b->file,
                     n->line, n->col, DS_YAML_MAX_KEYS);
    ds_yaml_free(n);
    return rc;
  }
  for (int i = 0; i < p->n; i++) {
    if (strcmp(p->key[i]->str, n->str) == 0) {
      int rc = ds_fail(DS_EINPUT,
                       "%s:%d:%d: duplicate key '%s' (first given at line %d); give each key once",
                       b->file, n->line, n->col, n->str, p->key[i]->line);
      ds_yaml_free(n);
      return rc;
    }
  }
  if (yt_grow(p) != DS_OK) {
    ds_yaml_free(n);
    return DS_ENOMEM;
  }
  p->key[p->n] = n;
  p->item[p->n] = NULL;
  return DS_OK;
}

/* A node that is still being built (a pending key in a map under
 * construction) must be freed along with the stack on error. */
static void yt_free_partial(yt_builder *b) {
  for (int d = b->depth - 1; d >= 0; d--) {
    ds_yn *p = b->stack[d];
    if (p->kind == DS_YN_MAP && p->cap > p->n && p->key[p->n]) {
      ds_yaml_free(p->key[p->n]);
      p->key[p->n] = NULL;
    }
  }
  ds_yaml_free(b->root); /* every node hangs off the root */
  b->depth = 0;
  b->root = NULL;
}

static int yt_anchor_check(yt_builder *b, const yaml_event_t *e, const yaml_char_t *anchor) {
  if (!anchor) return DS_OK;
  return yt_fail(b, e->start_mark,
                 "anchors and aliases are not supported (found anchor '&...'); write values out in full");
}

/* Tags (!!str, !foo) would change what a value means behind the option table's back. */
static int yt_tag_check(yt_builder *b, const yaml_event_t *e, const yaml_char_t *tag) {
  if (!tag) return DS_OK;
  char msg[256];
  const char *t = (const char *)tag, *core = "tag:yaml.org,2002:";
  int is_core = !strncmp(t, core, strlen(core)); /* libyaml expands "!!x" to this prefix */
  snprintf(msg, sizeof msg, "YAML tags are not supported (found '%s%.100s'); remove the tag and write "
           "the plain value", is_core ? "!!" : "", is_core ? t + strlen(core) : t);
  return yt_fail(b, e->start_mark, msg);
}

int ds_yaml_is_null(const ds_yn *v) {
  return v && v->kind == DS_YN_SCALAR && !v->quoted &&
         (!v->str[0] || !strcmp(v->str, "~") || !strcmp(v->str, "null") || !strcmp(v->str, "Null") ||
          !strcmp(v->str, "NULL"));
}

static int yt_open(yt_builder *b, const yaml_event_t *e, ds_yn_kind kind) {
  if (b->depth >= DS_YAML_MAX_DEPTH)
    return ds_fail(DS_EINPUT, "%s:%d:%d: nesting too deep (limit %d levels)", b->file,
                   (int)e->start_mark.line + 1, (int)e->start_mark.column + 1, DS_YAML_MAX_DEPTH);
  ds_yn *n = yt_new(b, kind, e->start_mark);
  if (!n) return DS_EINPUT;
  /* Attach now so the parent owns it; map values are attached on open. */
  int rc = yt_attach(b, n);
  if (rc != DS_OK) return rc;
  b->stack[b->depth++] = n;
  return DS_OK;
}

static int yt_event(yt_builder *b, const yaml_event_t *e) {
  switch (e->type) {
  case YAML_DOCUMENT_START_EVENT:
    if (++b->ndocs > 1)
      return yt_fail(b, e->start_mark, "only one YAML document per sweep file (remove the second '---')");
    return DS_OK;
  case YAML_ALIAS_EVENT:
    return yt_fail(b, e->start_mark, "aliases are not supported (found '*...'); write values out in full");
  case YAML_SCALAR_EVENT: {
    DS_TRY(yt_anchor_check(b, e, e->data.scalar.anchor));
    DS_TRY(yt_tag_check(b, e, e->data.scalar.tag));
    ds_yn *n = yt_new(b, DS_YN_SCALAR, e->start_mark);
    if (!n) return DS_EINPUT;
    n->str = ds_calloc(e->data.scalar.length + 1, 1);
    if (!n->str) {
      ds_yaml_free(n);
      return DS_ENOMEM;
    }
    memcpy(n->str, e->data.scalar.value, e->data.scalar.length);
    n->quoted = e->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                e->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    for (size_t i = 0; i < e->data.scalar.length; i++) {
      if (e->data.scalar.value[i] < 0x20 || e->data.scalar.value[i] == 0x7f) {
        ds_yaml_free(n); /* keeps every message on one line */
        return yt_fail(b, e->start_mark,
                       "line breaks, tabs and control characters are not allowed in keys or values");
      }
    }
    return yt_attach(b, n);
  }
  case YAML_SEQUENCE_START_EVENT:
    DS_TRY(yt_anchor_check(b, e, e->data.sequence_start.anchor));
    DS_TRY(yt_tag_check(b, e, e->data.sequence_start.tag));
    return yt_open(b, e, DS_YN_SEQ);
  case YAML_MAPPING_START_EVENT:
    DS_TRY(yt_anchor_check(b, e, e->data.mapping_start.anchor));
    DS_TRY(yt_tag_check(b, e, e->data.mapping_start.tag));
    return yt_open(b, e, DS_YN_MAP);
  case YAML_SEQUENCE_END_EVENT:
  case YAML_MAPPING_END_EVENT:
    if (b->depth > 0) b->depth--;
    return DS_OK;
  default:
    return DS_OK;
  }
}

static int yt_syntax_error(yt_builder *b, const yaml_parser_t *p) {
  yaml_mark_t m = p->problem_mark;
  if (p->error == YAML_READER_ERROR) {
    return ds_fail(DS_EINPUT, "%s:%d:%d: cannot read YAML: %s (at byte %zu)", b->file,
                   (int)m.line + 1, (int)m.column + 1, p->problem ? p->problem : "bad input",
                   p->problem_offset);
  }
  if (p->error == YAML_MEMORY_ERROR) return ds_fail(DS_ENOMEM, "%s: out of memory parsing YAML", b->file);
  if (p->context)
    return ds_fail(DS_EINPUT, "%s:%d:%d: YAML syntax error: %s %s (opened at line %d)", b->file,
                   (int)m.line + 1, (int)m.column + 1, p->problem ? p->problem : "invalid YAML",
                   p->context, (int)p->context_mark.line + 1);
  return ds_fail(DS_EINPUT, "%s:%d:%d: YAML syntax error: %s", b->file, (int)m.line + 1,
                 (int)m.column + 1, p->problem ? p->problem : "invalid YAML");
}

int ds_yaml_load(const char *file, const char *text, ds_yn **root) {
  yaml_parser_t p;
  yt_builder b;
  memset(&b, 0, sizeof b);
  b.file = file;
  *root = NULL;
  if (!yaml_parser_initialize(&p)) return ds_fail(DS_ENOMEM, "%s: cannot initialise YAML parser", file);
  yaml_parser_set_input_string(&p, (const unsigned char *)text, strlen(text));
  int rc = DS_OK, done = 0;
  while (!done) {
    yaml_event_t e;
    if (!yaml_parser_parse(&p, &e)) {
      rc = yt_syntax_error(&b, &p);
      break;
    }
    rc = yt_event(&b, &e);
    done = e.type == YAML_STREAM_END_EVENT;
    yaml_event_delete(&e);
    if (rc != DS_OK) break;
  }
  yaml_parser_delete(&p);
  if (rc != DS_OK) {
    yt_free_partial(&b);
    return rc;
  }
  *root = b.root;
  return DS_OK;
}
