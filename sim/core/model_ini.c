/*
 * model_ini.c: the native model format (doc/model-format.md), parsed with
 * libinih into a module tree.
 *
 * A file is a [model] section naming the root class plus one section per
 * class, whose keys are that class's children in forward execution order.
 * Classes may be used before they are defined, so parsing is two-pass:
 * libinih hands us the raw (section, key, value) entries in file order, and
 * only when the whole file is in do we resolve class references, reject
 * recursion, and check the size limits on the class graph (per-class module
 * and parameter counts, memoised) before a single module is allocated.  The
 * tree is then expanded with every leaf its own instance, as in PyTorch.
 *
 * Inputs are hand-written and small; the limits below exist so that a typo
 * such as "ModuleList(Block, 3200000)" fails with a message instead of
 * exhausting memory.
 */
#include "attn_table.h"
#include "ini_lines.h"
#include "model.h"
#include "textfile.h"
#include "units.h"
#include "xalloc.h"

#include <ctype.h>
#include <ini.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Defined in model.c (no private header; the declaration is repeated). */
void model__finalize(struct model *m);

#define INI_MAX_DIM 16777216        /* 2^24: any width, count of heads... */
#define INI_MAX_LIST 100000         /* entries in one ModuleList */
#define INI_MAX_MODULES 2000000     /* modules in the expanded tree */
#define INI_MAX_PARAMS 1000000000000000LL /* 1e15 parameters in all */
/* Class nesting depth.  Not a PyTorch limit: the expansion recurses once
 * per level, and this keeps a pathological chain of a million one-child
 * classes from overflowing the C stack.  Real models nest under 10 deep. */
#define INI_MAX_DEPTH 1000

enum param_type {
    P_DIM,    /* 1 .. INI_MAX_DIM */
    P_WINDOW, /* 0 .. INI_MAX_DIM, 0 = none */
    P_COUNT,  /* 1 .. INI_MAX_LIST */
    P_NUMEL,  /* 1 .. INI_MAX_PARAMS */
    P_BOOL,
    P_ROPE,   /* a bool (true: half) or a rope_style name */
    P_PROB,   /* a probability, 0 to 1 */
    P_CLASS,  /* a class name */
};

struct param_def {
    const char *name;
    enum param_type type;
    bool required;
};

#define CTOR_MAX_PARAMS 8

enum ctor {
    C_LINEAR, C_CONV1D, C_EMBEDDING, C_LAYERNORM, C_RMSNORM, C_ATTENTION,
    C_GELU, C_SILU, C_RELU, C_ACTIVATION, C_MUL, C_DROPOUT, C_CROSS_ENTROPY,
    C_MHA, C_PARAMETER, C_MODULELIST,
    C_CLASS, /* an instance of a [Section] class */
};

struct ctor_def {
    const char *name;
    enum layer_kind kind;
    const char *usage;
    struct param_def params[CTOR_MAX_PARAMS];
};

/* Indexed by enum ctor.  Positional arguments fill params in order; any
 * param may also be given as name=value, as in Python. */
static const struct ctor_def ctors[] = {
    {"Linear", LAYER_LINEAR,
     "Linear(in, out[, bias=true|false][, tied=true|false])",
     {{"in", P_DIM, true}, {"out", P_DIM, true}, {"bias", P_BOOL, false},
      {"tied", P_BOOL, false}}},
    {"Conv1D", LAYER_LINEAR, "Conv1D(in, out)",
     {{"in", P_DIM, true}, {"out", P_DIM, true}}},
    {"Embedding", LAYER_EMBEDDING, "Embedding(num, dim)",
     {{"num", P_DIM, true}, {"dim", P_DIM, true}}},
    {"LayerNorm", LAYER_LAYERNORM, "LayerNorm(dim[, bias=true|false])",
     {{"dim", P_DIM, true}, {"bias", P_BOOL, false}}},
    {"RMSNorm", LAYER_RMSNORM, "RMSNorm(dim)", {{"dim", P_DIM, true}}},
    {"Attention", LAYER_ATTENTION,
     "Attention(heads=H, head_dim=D[, kv_heads=K][, causal=true|false]"
     "[, window=W][, rope=true|false|half|complex|matrix][, dropout=P]"
     "[, softmax_fp32=true|false])",
     {{"heads", P_DIM, true}, {"head_dim", P_DIM, true},
      {"kv_heads", P_DIM, false}, {"causal", P_BOOL, false},
      {"window", P_WINDOW, false}, {"rope", P_ROPE, false},
      {"dropout", P_PROB, false}, {"softmax_fp32", P_BOOL, false}}},
    {"GELU", LAYER_ACTIVATION, "GELU(dim)", {{"dim", P_DIM, true}}},
    {"SiLU", LAYER_ACTIVATION, "SiLU(dim)", {{"dim", P_DIM, true}}},
    {"ReLU", LAYER_ACTIVATION, "ReLU(dim)", {{"dim", P_DIM, true}}},
    {"Activation", LAYER_ACTIVATION, "Activation(dim)",
     {{"dim", P_DIM, true}}},
    {"Mul", LAYER_MUL, "Mul(dim)", {{"dim", P_DIM, true}}},
    {"Dropout", LAYER_DROPOUT, "Dropout(dim)", {{"dim", P_DIM, true}}},
    {"CrossEntropy", LAYER_CROSS_ENTROPY, "CrossEntropy(vocab)",
     {{"vocab", P_DIM, true}}},
    {"MultiheadAttention", LAYER_MHA,
     "MultiheadAttention(embed_dim, heads[, bias=true|false][, dropout=P])",
     {{"embed_dim", P_DIM, true}, {"heads", P_DIM, true},
      {"bias", P_BOOL, false}, {"dropout", P_PROB, false}}},
    {"Parameter", LAYER_PARAMETER, "Parameter(numel)",
     {{"numel", P_NUMEL, true}}},
    {"ModuleList", LAYER_CONTAINER, "ModuleList(ClassName, count)",
     {{"class", P_CLASS, true}, {"count", P_COUNT, true}}},
};
#define N_CTORS ((int)(sizeof ctors / sizeof ctors[0]))

#define KNOWN_LAYERS "Linear, Conv1D, Embedding, LayerNorm, RMSNorm, " \
    "Attention, GELU, SiLU, ReLU, Activation, Mul, Dropout, CrossEntropy, " \
    "MultiheadAttention, Parameter, ModuleList"

struct ini_class;

/* One child definition: a key in a class section. */
struct ini_child {
    char *name;
    int line;
    enum ctor ctor;
    int64_t v[CTOR_MAX_PARAMS]; /* numeric/bool arguments, by param index */
    double prob[CTOR_MAX_PARAMS]; /* P_PROB arguments, by param index */
    bool set[CTOR_MAX_PARAMS];
    char *ref;                  /* class name (C_CLASS, C_MODULELIST) */
    char *cls;                  /* cls= override, or NULL */
    bool had_args;              /* C_CLASS written with parentheses */
    bool bad_args;              /* ... with arguments other than cls= */
    struct ini_class *ref_def;  /* resolved ref */
};

struct ini_class {
    char *name;
    int line;                   /* first line that mentions the section */
    struct ini_child *children;
    size_t n_children, cap_children;
    int state;                  /* 0 unvisited, 1 on the DFS stack, 2 done */
    int64_t modules;            /* modules per instance, incl. itself */
    int64_t params;             /* parameters per instance */
};

/* A raw key from libinih, before interpretation. */
struct ini_entry {
    char *section;
    char *key;
    char *value;
    int line;
    bool indented;              /* an indented line: inih's continuation */
};

struct ini_ctx {
    const char *origin;
    struct ini_lines rd;        /* the line reader; rd.line is the line
                                 * libinih is on */
    struct ini_entry *entries;
    size_t n_entries, cap_entries;
    struct ini_entry *headers;  /* "[Section]" lines (key/value unused) */
    size_t n_headers, cap_headers;
    struct ini_class *classes;  /* sorted by name once built */
    size_t n_classes;
    char *err;                  /* the error with the smallest line */
    int err_line;
};

/* Keep the error at the earliest line, so the user fixes the file top to
 * bottom whatever order the checks run in.  line 0 = not tied to a line. */
static void
ctx_error(struct ini_ctx *c, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
ctx_error(struct ini_ctx *c, int line, const char *fmt, ...)
{
    if (c->err != NULL && (line == 0 || line >= c->err_line))
        return;
    va_list ap;
    va_start(ap, fmt);
    char *what = xvasprintf(fmt, ap);
    va_end(ap);
    free(c->err);
    if (line > 0)
        c->err = xasprintf("%s:%d: %s", c->origin, line, what);
    else
        c->err = xasprintf("%s: %s", c->origin, what);
    free(what);
    c->err_line = line;
}

/*
 * Line hook: remember section headers, so that a class with no children
 * exists.  Lines are read with INI_LINES_KEEP_INDENT, so an indented
 * "[Name]" is not taken for one here.
 */
static void
ini_on_line(void *user, const char *line)
{
    struct ini_ctx *c = user;
    const char *p = line;
    if (c->rd.line == 1 && strncmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3;
    const char *close = strchr(p, ']');
    if (*p == '[' && close != NULL) {
        c->headers = xgrow(c->headers, &c->cap_headers, c->n_headers + 1,
                           sizeof *c->headers);
        struct ini_entry *h = &c->headers[c->n_headers++];
        memset(h, 0, sizeof *h);
        h->section = ini_lines_trim(p + 1, (size_t)(close - p - 1));
        h->line = c->rd.line;
    }
}

/* libinih handler: record the entry; all checks run after the parse. */
static int
ini_on_entry(void *user, const char *section, const char *name,
             const char *value)
{
    struct ini_ctx *c = user;
    c->entries = xgrow(c->entries, &c->cap_entries, c->n_entries + 1,
                       sizeof *c->entries);
    struct ini_entry *e = &c->entries[c->n_entries++];
    e->section = ini_lines_trim(section, strlen(section));
    e->key = xstrdup(name);
    e->value = ini_lines_value(&c->rd, value);
    e->line = c->rd.line;
    e->indented = ini_lines_indented(&c->rd);
    return 1;
}

static bool
is_ident(const char *s)
{
    if (!isalpha((unsigned char)*s) && *s != '_')
        return false;
    for (s++; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

static bool
is_child_name(const char *s)
{
    if (*s == '\0')
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

static int
find_ctor(const char *name)
{
    for (int i = 0; i < N_CTORS; i++)
        if (strcmp(ctors[i].name, name) == 0)
            return i;
    return -1;
}

/* Convert one argument; returns 0 or -1 with the error recorded. */
static int
parse_arg(struct ini_ctx *c, int line, struct ini_child *ch, int pi,
          const char *val)
{
    const struct ctor_def *d = &ctors[ch->ctor];
    const struct param_def *p = &d->params[pi];
    char *cause = NULL;
    int rc = 0;
    bool b;
    if (ch->set[pi]) {
        ctx_error(c, line, "argument '%s' of %s given twice", p->name,
                  d->name);
        return -1;
    }
    ch->set[pi] = true;
    switch (p->type) {
    case P_DIM:
        rc = units_parse_count(val, 1, INI_MAX_DIM, &ch->v[pi], &cause);
        break;
    case P_WINDOW:
        rc = units_parse_count(val, 0, INI_MAX_DIM, &ch->v[pi], &cause);
        break;
    case P_COUNT:
        rc = units_parse_count(val, 1, INI_MAX_LIST, &ch->v[pi], &cause);
        break;
    case P_NUMEL:
        rc = units_parse_count(val, 1, INI_MAX_PARAMS, &ch->v[pi], &cause);
        break;
    case P_BOOL:
        rc = units_parse_bool(val, &b, &cause);
        if (rc == 0)
            ch->v[pi] = b;
        break;
    case P_ROPE: {
        enum rope_style r;
        rc = rope_style_parse(val, &r, &cause);
        if (rc == 0)
            ch->v[pi] = r;
        break;
    }
    case P_PROB:
        rc = units_parse_real(val, 0, 1, &ch->prob[pi], &cause);
        break;
    case P_CLASS:
        if (!is_ident(val)) {
            ctx_error(c, line, "argument '%s' of %s: '%s' is not a class "
                      "name (write e.g. %s)", p->name, d->name, val,
                      d->usage);
            return -1;
        }
        ch->ref = xstrdup(val);
        break;
    }
    if (rc != 0) {
        ctx_error(c, line, "argument '%s' of %s: %s", p->name, d->name,
                  cause);
        free(cause);
        return -1;
    }
    return 0;
}

/* Split "a, b=c" inside the parentheses and assign the arguments. */
static int
parse_args(struct ini_ctx *c, int line, struct ini_child *ch,
           const char *args, const char *value)
{
    const struct ctor_def *d = ch->ctor == C_CLASS ? NULL : &ctors[ch->ctor];
    int npos = 0;
    bool seen_kw = false;
    const char *p = args;
    while (*p && isspace((unsigned char)*p))
        p++;
    if (*p == '\0')
        return 0;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char *arg = ini_lines_trim(p, n);
        char *eq = strchr(arg, '=');
        int rc = 0;
        if (*arg == '\0') {
            ctx_error(c, line, "empty argument in '%s'", value);
            rc = -1;
        } else if (eq != NULL) {
            *eq = '\0';
            char *key = ini_lines_trim(arg, strlen(arg));
            char *val = ini_lines_trim(eq + 1, strlen(eq + 1));
            seen_kw = true;
            if (strcmp(key, "cls") == 0 && ch->ctor != C_MODULELIST) {
                if (ch->cls != NULL) {
                    ctx_error(c, line, "argument 'cls' given twice");
                    rc = -1;
                } else if (!is_ident(val)) {
                    ctx_error(c, line, "cls=%s: not a class name (write "
                              "e.g. cls=LlamaRMSNorm)", val);
                    rc = -1;
                } else {
                    ch->cls = xstrdup(val);
                }
            } else if (d == NULL) {
                ch->bad_args = true;
            } else {
                int pi = -1;
                for (int i = 0; i < CTOR_MAX_PARAMS && d->params[i].name;
                     i++)
                    if (strcmp(d->params[i].name, key) == 0)
                        pi = i;
                if (pi < 0) {
                    ctx_error(c, line, "unknown argument '%s' for %s "
                              "(usage: %s%s)", key, d->name, d->usage,
                              ch->ctor == C_MODULELIST ? ""
                                                       : ", plus cls=Name");
                    rc = -1;
                } else {
                    rc = parse_arg(c, line, ch, pi, val);
                }
            }
            free(key);
            free(val);
        } else if (d == NULL) {
            ch->bad_args = true;
        } else if (seen_kw) {
            ctx_error(c, line, "positional argument '%s' after a keyword "
                      "argument (usage: %s)", arg, d->usage);
            rc = -1;
        } else if (npos >= CTOR_MAX_PARAMS || d->params[npos].name == NULL) {
            ctx_error(c, line, "too many arguments for %s (usage: %s)",
                      d->name, d->usage);
            rc = -1;
        } else {
            rc = parse_arg(c, line, ch, npos++, arg);
        }
        free(arg);
        if (rc != 0)
            return -1;
        if (comma == NULL)
            return 0;
        p = comma + 1;
    }
}

/*
 * Interpret a child value: "Name", "Name(args)" or a constructor call.
 * Returns 0, or -1 with the error recorded at LINE.
 */
static int
parse_child(struct ini_ctx *c, struct ini_child *ch, const char *value)
{
    int line = ch->line;
    const char *p = value;
    const char *id = p;
    if (isalpha((unsigned char)*p) || *p == '_')
        for (p++; isalnum((unsigned char)*p) || *p == '_'; p++)
            ;
    if (p == id) {
        ctx_error(c, line, "child '%s': expected a layer such as "
                  "'Linear(1024, 4096)' or a class name, got '%s'",
                  ch->name, value);
        return -1;
    }
    char *name = xstrndup(id, (size_t)(p - id));
    while (isspace((unsigned char)*p))
        p++;
    int ci = find_ctor(name);
    if (*p == '\0') {
        if (ci >= 0) {
            ctx_error(c, line, "%s needs arguments (usage: %s)", name,
                      ctors[ci].usage);
            free(name);
            return -1;
        }
        ch->ctor = C_CLASS;
        ch->ref = name;
        return 0;
    }
    size_t rest = strlen(p);
    if (*p != '(' || p[rest - 1] != ')' ||
        strchr(p + 1, '(') != NULL || strchr(p, ')') != p + rest - 1) {
        ctx_error(c, line, "child '%s': cannot read '%s' (write "
                  "Name(arg, ...) or a bare class name)", ch->name, value);
        free(name);
        return -1;
    }
    char *args = xstrndup(p + 1, rest - 2);
    int rc;
    if (ci < 0) {
        ch->ctor = C_CLASS;
        ch->ref = name;
        ch->had_args = true;
        rc = parse_args(c, line, ch, args, value);
    } else {
        ch->ctor = (enum ctor)ci;
        free(name);
        rc = parse_args(c, line, ch, args, value);
        const struct ctor_def *d = &ctors[ci];
        for (int i = 0; rc == 0 && i < CTOR_MAX_PARAMS && d->params[i].name;
             i++)
            if (d->params[i].required && !ch->set[i]) {
                ctx_error(c, line, "missing argument '%s' of %s (usage: "
                          "%s)", d->params[i].name, d->name, d->usage);
                rc = -1;
            }
    }
    free(args);
    if (rc == 0 && ch->ctor == C_ATTENTION) {
        int64_t heads = ch->v[0], kv = ch->set[2] ? ch->v[2] : heads;
        if (kv > heads || heads % kv != 0) {
            ctx_error(c, line, "Attention: kv_heads=%lld must divide "
                      "heads=%lld", (long long)kv, (long long)heads);
            rc = -1;
        }
    }
    if (rc == 0 && ch->ctor == C_MHA && ch->v[0] % ch->v[1] != 0) {
        ctx_error(c, line, "MultiheadAttention: heads=%lld must divide "
                  "embed_dim=%lld", (long long)ch->v[1],
                  (long long)ch->v[0]);
        rc = -1;
    }
    return rc;
}

/* Parameters registered on one leaf (see model.h for the shapes). */
static int64_t
child_leaf_params(const struct ini_child *ch)
{
    const int64_t *v = ch->v;
    switch (ch->ctor) {
    case C_LINEAR: {
        bool bias = ch->set[2] ? v[2] : true, tied = ch->set[3] && v[3];
        return (tied ? 0 : v[0] * v[1]) + (bias ? v[1] : 0);
    }
    case C_CONV1D:
        return v[0] * v[1] + v[1];
    case C_EMBEDDING:
        return v[0] * v[1];
    case C_LAYERNORM:
        return v[0] * ((ch->set[1] ? v[1] : true) ? 2 : 1);
    case C_RMSNORM:
        return v[0];
    case C_MHA:
        /* in_proj_weight 3d^2 + out_proj.weight d^2, biases 3d + d
         * (torch.nn.MultiheadAttention with kdim = vdim = embed_dim). */
        return 4 * v[0] * v[0] + ((ch->set[2] ? v[2] : true) ? 4 * v[0] : 0);
    case C_PARAMETER:
        return v[0];
    default:
        return 0;
    }
}

static int
cmp_class_name(const void *a, const void *b)
{
    const struct ini_class *x = a, *y = b;
    int r = strcmp(x->name, y->name);
    return r ? r : (x->line > y->line) - (x->line < y->line);
}

static struct ini_class *
find_class(struct ini_ctx *c, const char *name)
{
    struct ini_class key = {.name = unconst(name), .line = 0};
    size_t lo = 0, hi = c->n_classes;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int r = strcmp(c->classes[mid].name, key.name);
        if (r == 0)
            return &c->classes[mid];
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Collect the distinct class sections (sorted by name, first line kept). */
static void
collect_classes(struct ini_ctx *c)
{
    size_t n = 0, cap = c->n_entries + c->n_headers;
    c->classes = xcalloc(cap ? cap : 1, sizeof *c->classes);
    for (size_t pass = 0; pass < 2; pass++) {
        const struct ini_entry *list = pass ? c->entries : c->headers;
        size_t len = pass ? c->n_entries : c->n_headers;
        for (size_t i = 0; i < len; i++)
            if (strcmp(list[i].section, "model") != 0 &&
                list[i].section[0] != '\0') {
                c->classes[n].name = list[i].section;
                c->classes[n].line = list[i].line;
                n++;
            }
    }
    qsort(c->classes, n, sizeof *c->classes, cmp_class_name);
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        if (w == 0 || strcmp(c->classes[w - 1].name, c->classes[i].name))
            c->classes[w++] = c->classes[i];
    c->n_classes = w;
    for (size_t i = 0; i < w; i++)
        c->classes[i].name = xstrdup(c->classes[i].name);
}

struct model_keys {
    char *name, *root, *layer_cls;
    int64_t hidden, vocab;
    int attention;             /* enum attn_kernel the config asks for */
    bool alibi;
    int root_line, layer_line;
};

static void
parse_model_key(struct ini_ctx *c, struct model_keys *mk,
                const struct ini_entry *e, int *seen_lines)
{
    static const char *const keys[] = {"name", "root", "layer_class",
                                       "hidden", "vocab", "attention",
                                       "alibi"};
    int k = -1;
    for (int i = 0; i < 7; i++)
        if (strcmp(e->key, keys[i]) == 0)
            k = i;
    if (k < 0) {
        ctx_error(c, e->line, "unknown key '%s' in [model] (known: name, "
                  "root, layer_class, hidden, vocab, attention, alibi)",
                  e->key);
        return;
    }
    if (seen_lines[k] != 0) {
        ctx_error(c, e->line, "duplicate key '%s' in [model] (first set on "
                  "line %d)", e->key, seen_lines[k]);
        return;
    }
    seen_lines[k] = e->line;
    char *cause = NULL;
    switch (k) {
    case 0:
        if (e->value[0] == '\0')
            ctx_error(c, e->line, "[model] name is empty");
        else
            mk->name = xstrdup(e->value);
        break;
    case 1:
    case 2:
        if (!is_ident(e->value)) {
            ctx_error(c, e->line, "[model] %s: '%s' is not a class name",
                      e->key, e->value);
        } else if (k == 1) {
            mk->root = xstrdup(e->value);
            mk->root_line = e->line;
        } else {
            mk->layer_cls = xstrdup(e->value);
            mk->layer_line = e->line;
        }
        break;
    case 5:
        mk->attention = attn_kernel_parse(e->value);
        if (mk->attention < 0) {
            ctx_error(c, e->line, "[model] attention: '%s' is not a kernel "
                      "(%s)", e->value, attn_kernel_choices);
            mk->attention = ATTN_AUTO;
        }
        break;
    case 6:
        if (strcmp(e->value, "true") == 0)
            mk->alibi = true;
        else if (strcmp(e->value, "false") != 0)
            ctx_error(c, e->line, "[model] alibi: '%s' is not true or false",
                      e->value);
        break;
    default:
        if (units_parse_count(e->value, 1, INI_MAX_DIM,
                              k == 3 ? &mk->hidden : &mk->vocab,
                              &cause) != 0) {
            ctx_error(c, e->line, "[model] %s: %s", e->key, cause);
            free(cause);
        }
        break;
    }
}

static int
cmp_child_name(const void *a, const void *b)
{
    const struct ini_child *x = *(const struct ini_child *const *)a;
    const struct ini_child *y = *(const struct ini_child *const *)b;
    int r = strcmp(x->name, y->name);
    return r ? r : (x->line > y->line) - (x->line < y->line);
}

/* Report the earliest repeated child name of class K.  Sorting a copy
 * keeps this O(n log n) for a class with 100000 explicit children. */
static void
check_duplicates(struct ini_ctx *c, struct ini_class *k)
{
    if (k->n_children < 2)
        return;
    struct ini_child **v = xcalloc(k->n_children, sizeof *v);
    for (size_t i = 0; i < k->n_children; i++)
        v[i] = &k->children[i];
    qsort(v, k->n_children, sizeof *v, cmp_child_name);
    for (size_t i = 1; i < k->n_children; i++)
        if (strcmp(v[i]->name, v[i - 1]->name) == 0) {
            size_t first = i - 1;
            while (first > 0 && strcmp(v[first - 1]->name, v[i]->name) == 0)
                first--;
            ctx_error(c, v[i]->line, "duplicate child '%s' in [%s] (first "
                      "defined on line %d; rename one)", v[i]->name,
                      k->name, v[first]->line);
        }
    free(v);
}

/*
 * Depth-first walk of the class graph from K: rejects a class that
 * contains itself and memoises modules and parameters per instance, capped
 * just above the limits so the products cannot overflow.  STACK holds the
 * classes being expanded, for the cycle message.  Returns 0 or -1.
 */
static int
class_visit(struct ini_ctx *c, struct ini_class *k, struct ini_class **stack,
            int depth)
{
    k->state = 1;
    stack[depth] = k;
    int64_t mods = 1, params = 0;
    for (size_t i = 0; i < k->n_children; i++) {
        struct ini_child *ch = &k->children[i];
        int64_t cm = 1, cp = child_leaf_params(ch);
        if (ch->ctor == C_CLASS || ch->ctor == C_MODULELIST) {
            struct ini_class *r = ch->ref_def;
            if (r->state == 1) {
                /* Name the loop, from the first time R was entered. */
                int from = depth;
                while (stack[from] != r)
                    from--;
                size_t len = strlen(r->name) + 1;
                for (int j = from; j <= depth; j++)
                    len += strlen(stack[j]->name) + 4;
                char *path = xmalloc(len), *w = path;
                for (int j = from; j <= depth; j++)
                    w += sprintf(w, "%s -> ", stack[j]->name);
                strcpy(w, r->name);
                ctx_error(c, ch->line, "class '%s' contains itself (%s; a "
                          "module cannot be its own descendant)", r->name,
                          path);
                free(path);
                return -1;
            }
            if (r->state == 0) {
                if (depth + 1 >= INI_MAX_DEPTH) {
                    ctx_error(c, ch->line, "classes nest more than %d "
                              "deep (flatten the hierarchy)", INI_MAX_DEPTH);
                    return -1;
                }
                if (class_visit(c, r, stack, depth + 1) != 0)
                    return -1;
            }
            if (ch->ctor == C_CLASS) {
                cm = r->modules;
                cp = r->params;
            } else {
                int64_t n = ch->v[1];
                cm = 1 + n * r->modules;
                cp = r->params > INI_MAX_PARAMS / n ? INI_MAX_PARAMS + 1
                                                    : n * r->params;
            }
        }
        mods += cm;
        params += cp;
        if (mods > INI_MAX_MODULES) {
            ctx_error(c, ch->line, "class '%s' expands to more than %d "
                      "modules (reduce the ModuleList counts)", k->name,
                      INI_MAX_MODULES);
            return -1;
        }
        if (params > INI_MAX_PARAMS) {
            ctx_error(c, ch->line, "class '%s' has more than 1e15 "
                      "parameters (check the dimensions and counts)",
                      k->name);
            return -1;
        }
    }
    k->modules = mods;
    k->params = params;
    k->state = 2;
    return 0;
}

static struct module *
module_new(const char *name, const char *cls, enum layer_kind kind)
{
    struct module *mod = xcalloc(1, sizeof *mod);
    mod->name = xstrdup(name);
    mod->cls = xstrdup(cls);
    mod->kind = kind;
    return mod;
}

static struct module *build_class(const struct ini_class *k,
                                  const char *name, const char *cls);

/* Expand one child definition into a fresh module subtree. */
static struct module *
build_child(const struct ini_child *ch)
{
    const int64_t *v = ch->v;
    if (ch->ctor == C_CLASS)
        return build_class(ch->ref_def, ch->name,
                           ch->cls ? ch->cls : ch->ref_def->name);
    if (ch->ctor == C_MODULELIST) {
        struct module *list = module_new(ch->name, "ModuleList",
                                         LAYER_CONTAINER);
        list->n_children = (int)v[1];
        list->children = xcalloc((size_t)v[1], sizeof *list->children);
        for (int64_t i = 0; i < v[1]; i++) {
            char idx[24];
            snprintf(idx, sizeof idx, "%lld", (long long)i);
            list->children[i] = build_class(ch->ref_def, idx,
                                            ch->ref_def->name);
        }
        return list;
    }
    const struct ctor_def *d = &ctors[ch->ctor];
    struct module *mod = module_new(ch->name, ch->cls ? ch->cls : d->name,
                                    d->kind);
    mod->own_params = child_leaf_params(ch);
    switch (ch->ctor) {
    case C_LINEAR:
    case C_CONV1D:
        mod->in = v[0];
        mod->out = v[1];
        mod->bias = ch->ctor == C_CONV1D || !ch->set[2] || v[2];
        mod->tied = ch->ctor == C_LINEAR && ch->set[3] && v[3];
        break;
    case C_EMBEDDING:
        mod->in = v[0];
        mod->out = v[1];
        break;
    case C_LAYERNORM:
        mod->out = v[0];
        mod->bias = !ch->set[1] || v[1];
        break;
    case C_ATTENTION:
        mod->heads = v[0];
        mod->head_dim = v[1];
        mod->kv_heads = ch->set[2] ? v[2] : v[0];
        mod->causal = !ch->set[3] || v[3];
        mod->window = ch->set[4] ? v[4] : 0;
        mod->rope = ch->set[5] ? (enum rope_style)v[5] : ROPE_NONE;
        mod->dropout = ch->set[6] ? ch->prob[6] : 0;
        mod->softmax_fp32 = ch->set[7] && v[7];
        break;
    case C_MHA:
        mod->out = v[0];
        mod->heads = v[1];
        mod->bias = !ch->set[2] || v[2];
        mod->dropout = ch->set[3] ? ch->prob[3] : 0;
        break;
    case C_PARAMETER:
        mod->in = v[0];
        break;
    default: /* RMSNorm, activations, Mul, Dropout, CrossEntropy: one
              * width */
        mod->out = v[0];
        break;
    }
    return mod;
}

static struct module *
build_class(const struct ini_class *k, const char *name, const char *cls)
{
    struct module *mod = module_new(name, cls, LAYER_CONTAINER);
    mod->n_children = (int)k->n_children;
    mod->children = xcalloc(k->n_children, sizeof *mod->children);
    for (size_t i = 0; i < k->n_children; i++)
        mod->children[i] = build_child(&k->children[i]);
    return mod;
}

static void
ctx_free(struct ini_ctx *c)
{
    for (size_t i = 0; i < c->n_entries; i++) {
        free(c->entries[i].section);
        free(c->entries[i].key);
        free(c->entries[i].value);
    }
    for (size_t i = 0; i < c->n_headers; i++)
        free(c->headers[i].section);
    for (size_t i = 0; i < c->n_classes; i++) {
        struct ini_class *k = &c->classes[i];
        for (size_t j = 0; j < k->n_children; j++) {
            free(k->children[j].name);
            free(k->children[j].ref);
            free(k->children[j].cls);
        }
        free(k->children);
        free(k->name);
    }
    free(c->entries);
    free(c->headers);
    free(c->classes);
    free(c->err);
}

/* Pass 1: interpret every raw entry in file order. */
static void
interpret_entries(struct ini_ctx *c, struct model_keys *mk)
{
    int seen[7] = {0};
    for (size_t i = 0; i < c->n_entries; i++) {
        const struct ini_entry *e = &c->entries[i];
        if (e->section[0] == '\0') {
            ctx_error(c, e->line, "key '%s' is outside any section (put it "
                      "under [model] or a [ClassName] section)", e->key);
            continue;
        }
        /* libinih reads an indented line as a continuation of the
         * previous value, and an indented key right after a header as a
         * key: either way the indentation cannot mean what was meant. */
        if (e->indented) {
            ctx_error(c, e->line, "indented line (the INI reader takes it "
                      "as a continuation of '%s'; remove the indentation)",
                      e->key);
            continue;
        }
        if (strcmp(e->section, "model") == 0) {
            parse_model_key(c, mk, e, seen);
            continue;
        }
        struct ini_class *k = find_class(c, e->section);
        if (!is_child_name(e->key)) {
            ctx_error(c, e->line, "'%s' is not a valid child name (use "
                      "letters, digits and '_', as a Python attribute or "
                      "ModuleList index)", e->key);
            continue;
        }
        k->children = xgrow(k->children, &k->cap_children,
                            k->n_children + 1, sizeof *k->children);
        struct ini_child *ch = &k->children[k->n_children++];
        memset(ch, 0, sizeof *ch);
        ch->name = xstrdup(e->key);
        ch->line = e->line;
        parse_child(c, ch, e->value);
    }
    for (size_t i = 0; i < c->n_classes; i++) {
        struct ini_class *k = &c->classes[i];
        if (!is_ident(k->name))
            ctx_error(c, k->line, "[%s]: not a valid class name (use "
                      "letters, digits and '_')", k->name);
        else if (find_ctor(k->name) >= 0)
            ctx_error(c, k->line, "[%s]: '%s' is a built-in layer and "
                      "cannot be a class name (rename the section)",
                      k->name, k->name);
        check_duplicates(c, k);
    }
}

/* Pass 2: resolve class references. */
static void
resolve_refs(struct ini_ctx *c)
{
    for (size_t i = 0; i < c->n_classes; i++) {
        struct ini_class *k = &c->classes[i];
        for (size_t j = 0; j < k->n_children; j++) {
            struct ini_child *ch = &k->children[j];
            if (ch->ref == NULL)
                continue;
            ch->ref_def = find_class(c, ch->ref);
            if (ch->ref_def == NULL && ch->had_args)
                ctx_error(c, ch->line, "unknown layer '%s' (known: %s; or "
                          "define a [%s] section)", ch->ref, KNOWN_LAYERS,
                          ch->ref);
            else if (ch->ref_def == NULL)
                ctx_error(c, ch->line, "class '%s' is not defined (add a "
                          "[%s] section)", ch->ref, ch->ref);
            else if (ch->bad_args)
                ctx_error(c, ch->line, "class '%s' takes no arguments but "
                          "cls=Name (write '%s' or '%s(cls=Name)')",
                          ch->ref, ch->ref, ch->ref);
        }
    }
}

static bool
tree_has_class(const struct model *m, const char *cls)
{
    for (int i = 0; i < m->n_modules; i++)
        if (strcmp(m->modules[i]->cls, cls) == 0)
            return true;
    return false;
}

static int
cmp_class_line(const void *a, const void *b)
{
    const struct ini_class *x = *(const struct ini_class *const *)a;
    const struct ini_class *y = *(const struct ini_class *const *)b;
    return (x->line > y->line) - (x->line < y->line);
}

/*
 * Parse TEXT (the whole file) into a finalized model, or return NULL with
 * *cause (caller frees) set to "ORIGIN:LINE: what (how to fix)".
 */
struct model *
model_parse_ini(const char *text, const char *origin, char **cause)
{
    struct ini_ctx c = {.origin = origin};
    struct model_keys mk = {0};
    struct model *m = NULL;
    struct ini_class **order = NULL, **stack = NULL;

    /* Indented lines are kept so that they can be reported; a '#'
     * anywhere in a value starts a comment, as this format always had it. */
    ini_lines_init(&c.rd, text, INI_LINES_KEEP_INDENT |
                   INI_LINES_KEEP_NEWLINE | INI_LINES_HASH_ANYWHERE);
    int rc = ini_lines_parse(&c.rd, ini_on_entry, ini_on_line, &c);
    if (c.rd.too_long)
        ctx_error(&c, c.rd.line, "line is %zu characters long, more than "
                  "the %d the INI reader takes (shorten it)",
                  c.rd.long_len, c.rd.max_len);
    if (rc > 0)
        ctx_error(&c, rc, "syntax error (expected 'name = value', "
                  "'[Section]' or a # comment)");
    collect_classes(&c);
    interpret_entries(&c, &mk);
    if (c.err != NULL)
        goto fail;
    resolve_refs(&c);
    if (c.err != NULL)
        goto fail;

    struct ini_class *root = NULL;
    if (mk.root == NULL) {
        ctx_error(&c, 0, "no root class (add 'root = ClassName' under a "
                  "[model] section)");
        goto fail;
    }
    root = find_class(&c, mk.root);
    if (root == NULL) {
        ctx_error(&c, mk.root_line, "root class '%s' is not defined (add "
                  "a [%s] section)", mk.root, mk.root);
        goto fail;
    }

    /* Visit classes in file order so the first problem reported is the
     * one nearest the top. */
    order = xcalloc(c.n_classes + 1, sizeof *order);
    stack = xcalloc(INI_MAX_DEPTH + 1, sizeof *stack);
    for (size_t i = 0; i < c.n_classes; i++)
        order[i] = &c.classes[i];
    qsort(order, c.n_classes, sizeof *order, cmp_class_line);
    for (size_t i = 0; i < c.n_classes; i++)
        if (order[i]->state == 0 && class_visit(&c, order[i], stack, 0))
            goto fail;

    m = xcalloc(1, sizeof *m);
    if (mk.name != NULL) {
        m->name = mk.name;
        mk.name = NULL;
    } else {
        m->name = textfile_stem(origin);
    }
    m->source = xstrdup(origin);
    m->layer_cls = mk.layer_cls;
    mk.layer_cls = NULL;
    m->hidden = mk.hidden;
    m->vocab = mk.vocab;
    m->attention = mk.attention;
    m->alibi = mk.alibi;
    m->root = build_class(root, "", root->name);
    model__finalize(m);
    if (m->n_params == 0) {
        ctx_error(&c, 0, "model '%s' has no parameters (FSDP would have "
                  "nothing to shard)", m->name);
        goto fail;
    }
    if (m->layer_cls != NULL && !tree_has_class(m, m->layer_cls)) {
        ctx_error(&c, mk.layer_line, "layer_class '%s' matches no module "
                  "in the model (use the class name of its repeated "
                  "block)", m->layer_cls);
        goto fail;
    }
    goto done;

fail:
    model_free(m);
    m = NULL;
    *cause = c.err;
    c.err = NULL;
done:
    free(order);
    free(stack);
    free(mk.name);
    free(mk.root);
    free(mk.layer_cls);
    ctx_free(&c);
    return m;
}
