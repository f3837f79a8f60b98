/*
 * model.c: loading models by name or path, and the parts of a model that do
 * not depend on where it came from (see model.h).
 *
 * A model reaches us either as a native INI file (model_ini.c) or as a
 * Hugging Face config.json that model_hf.c translates into the native
 * format, so there is exactly one tree builder.  Both end in
 * model__finalize() below, which fills in everything derived from the tree:
 * parent pointers, the pre-order module array (PyTorch's named_modules()
 * order, root first), parameter totals and the default width and vocabulary.
 *
 * Model trees are small (a 96-layer model has a few thousand modules; the
 * format caps them at two million), so the walks here are plain recursion;
 * model_ini.c bounds the nesting depth, which bounds the stack.
 */
#define _POSIX_C_SOURCE 200809L /* stat() */

#include "model.h"
#include "builtin.h"
#include "textfile.h"
#include "units.h"
#include "xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Shared with model_ini.c (there is no private header for the model
 * module; the declaration is repeated there). */
void model__finalize(struct model *m);

/* Largest model file read from disk.  The biggest real input is a few KiB;
 * the cap keeps a mistaken path (a checkpoint, a log) from being slurped. */
#define MODEL_MAX_FILE_BYTES ((size_t)16 * 1024 * 1024)

static int
count_modules(const struct module *mod)
{
    int n = 1;
    for (int i = 0; i < mod->n_children; i++)
        n += count_modules(mod->children[i]);
    return n;
}

/* Pre-order fill of m->modules; returns the subtree's parameter count. */
static int64_t
finalize_walk(struct model *m, struct module *mod, struct module *parent,
              int *next)
{
    mod->parent = parent;
    mod->index = (*next)++;
    m->modules[mod->index] = mod;
    int64_t sum = mod->own_params;
    for (int i = 0; i < mod->n_children; i++)
        sum += finalize_walk(m, mod->children[i], mod, next);
    mod->subtree_params = sum;
    return sum;
}

/*
 * Derive everything in the model that follows from the tree.  hidden and
 * vocab are only defaulted when the source left them 0: the width is the
 * output of the first embedding (the residual stream of a transformer) or,
 * without one, the input of the first linear layer (the toy MLP); the
 * vocabulary is the size of the last cross-entropy head.
 */
void
model__finalize(struct model *m)
{
    m->n_modules = count_modules(m->root);
    m->modules = xcalloc((size_t)m->n_modules, sizeof *m->modules);
    int next = 0;
    m->n_params = finalize_walk(m, m->root, NULL, &next);

    int64_t first_embed = 0, first_linear = 0, last_ce = 0;
    for (int i = 0; i < m->n_modules; i++) {
        const struct module *mod = m->modules[i];
        if (mod->kind == LAYER_EMBEDDING && first_embed == 0)
            first_embed = mod->out;
        else if (mod->kind == LAYER_LINEAR && first_linear == 0)
            first_linear = mod->in;
        else if (mod->kind == LAYER_MHA && first_linear == 0)
            first_linear = mod->out;
        else if (mod->kind == LAYER_CROSS_ENTROPY)
            last_ce = mod->out;
    }
    if (m->hidden == 0)
        m->hidden = first_embed ? first_embed : first_linear;
    if (m->vocab == 0)
        m->vocab = last_ce;
}

static void
module_free_tree(struct module *mod)
{
    if (mod == NULL)
        return;
    for (int i = 0; i < mod->n_children; i++)
        module_free_tree(mod->children[i]);
    free(mod->children);
    free(mod->name);
    free(mod->cls);
    free(mod);
}

void
model_free(struct model *m)
{
    if (m == NULL)
        return;
    module_free_tree(m->root);
    free(m->modules);
    free(m->name);
    free(m->source);
    free(m->layer_cls);
    free(m);
}

/* Dotted path from the root ("" for the root itself); caller frees. */
char *
model_module_path(const struct module *mod)
{
    size_t len = 0;
    int depth = 0;
    for (const struct module *p = mod; p->parent != NULL; p = p->parent) {
        len += strlen(p->name) + 1;
        depth++;
    }
    if (depth == 0)
        return xstrdup("");
    char *s = xmalloc(len);
    /* Fill from the end: the walk goes leaf to root. */
    size_t end = len - 1;
    s[end] = '\0';
    for (const struct module *p = mod; p->parent != NULL; p = p->parent) {
        size_t n = strlen(p->name);
        end -= n;
        memcpy(s + end, p->name, n);
        if (end > 0)
            s[--end] = '.';
    }
    return s;
}

/* Two subtrees are the same shape when every module matches in name, class,
 * kind, leaf shape and children; parameter counts then match too. */
static bool
module_same_shape(const struct module *a, const struct module *b,
                  bool compare_name)
{
    if (compare_name && strcmp(a->name, b->name) != 0)
        return false;
    if (strcmp(a->cls, b->cls) != 0 || a->kind != b->kind ||
        a->in != b->in || a->out != b->out || a->heads != b->heads ||
        a->kv_heads != b->kv_heads || a->head_dim != b->head_dim ||
        a->window != b->window || a->bias != b->bias ||
        a->causal != b->causal || a->tied != b->tied ||
        a->rope != b->rope || a->dropout != b->dropout ||
        a->own_params != b->own_params ||
        a->n_children != b->n_children)
        return false;
    for (int i = 0; i < a->n_children; i++)
        if (!module_same_shape(a->children[i], b->children[i], true))
            return false;
    return true;
}

static void
print_line(FILE *out, int depth, const char *name, const struct module *mod,
           int run, const struct model_costs *mc)
{
    fprintf(out, "%*s%s (%s)", depth * 2, "", name, mod->cls);
    if (run > 1)
        fprintf(out, " x%d", run);
    fprintf(out, " own=%lld subtree=%lld", (long long)mod->own_params,
            (long long)mod->subtree_params);
    if (mc)
        fprintf(out, " fwd_flops=%.4g saved_bytes=%.4g",
                mc->fwd_flops[mod->index], mc->saved_bytes[mod->index]);
    fprintf(out, "%s\n", run > 1 ? " each" : "");
}

static void
print_children(FILE *out, const struct module *mod, int depth,
               const struct model_costs *mc)
{
    bool is_list = strcmp(mod->cls, "ModuleList") == 0;
    for (int i = 0; i < mod->n_children; i++) {
        const struct module *c = mod->children[i];
        int j = i + 1;
        /* Runs of identical ModuleList entries print once, so a 96-layer
         * model stays readable; names are "0".."n-1", hence not compared. */
        if (is_list)
            while (j < mod->n_children &&
                   module_same_shape(c, mod->children[j], false))
                j++;
        if (j - i > 1) {
            char *range = xasprintf("%s..%s", c->name,
                                    mod->children[j - 1]->name);
            print_line(out, depth, range, c, j - i, mc);
            free(range);
        } else {
            print_line(out, depth, c->name, c, 1, mc);
        }
        print_children(out, c, depth + 1, mc);
        i = j - 1;
    }
}

/* One line per module, two spaces per level; the root is shown under the
 * model's name.  Output depends only on the tree (golden tests diff it). */
void
model_print_tree(const struct model *m, const struct model_costs *mc,
                 FILE *out)
{
    print_line(out, 0, m->name, m->root, 1, mc);
    print_children(out, m->root, 1, mc);
}

static bool
looks_like_path(const char *s)
{
    size_t n = strlen(s);
    return strchr(s, '/') != NULL ||
           (n > 4 && strcmp(s + n - 4, ".ini") == 0) ||
           (n > 5 && strcmp(s + n - 5, ".json") == 0);
}

/*
 * Read a whole model file into a NUL-terminated string (caller frees).  The
 * size is bounded, and a NUL byte inside is rejected because both parsers
 * would silently stop there.  Only regular files are read.
 */
static char *
read_model_file(const char *path, char **cause)
{
    return textfile_load(path, MODEL_MAX_FILE_BYTES,
                         "is it a model .ini or config.json?", cause);
}

/* Parse TEXT as JSON or INI by its first non-space byte. */
static struct model *
model_from_text(const char *text, const char *origin, const char *stem,
                char **cause)
{
    const char *p = text;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (*p != '{')
        return model_parse_ini(text, origin, cause);

    char *ini = model_hf_to_ini(text, origin, stem, cause);
    if (ini == NULL)
        return NULL;
    struct model *m = model_parse_ini(ini, origin, cause);
    free(ini);
    if (m != NULL) {
        /* A config.json has no name of its own; the INI written for it may
         * have omitted one the INI syntax cannot carry. */
        free(m->name);
        m->name = xstrdup(stem);
    }
    return m;
}

struct model *
model_load(const char *name_or_path, char **cause)
{
    struct stat st;
    if (stat(name_or_path, &st) == 0 || looks_like_path(name_or_path)) {
        char *text = read_model_file(name_or_path, cause);
        if (text == NULL)
            return NULL;
        char *stem = textfile_stem(name_or_path);
        struct model *m = model_from_text(text, name_or_path, stem, cause);
        free(stem);
        free(text);
        if (m != NULL) {
            free(m->source);
            m->source = xstrdup(name_or_path);
        }
        return m;
    }

    const struct builtin_file *bf = builtin_find("models", name_or_path);
    if (bf == NULL) {
        char *list = builtin_names("models");
        *cause = xasprintf("unknown model '%s' (built-in: %s; or give the "
                           "path of a .ini file or a Hugging Face "
                           "config.json)", name_or_path, list);
        free(list);
        return NULL;
    }
    /* Messages about a built-in name the file it was compiled from. */
    char *origin = xasprintf("models/%s.%s", bf->name, bf->ext);
    struct model *m = model_from_text(bf->text, origin, bf->name, cause);
    free(origin);
    if (m != NULL) {
        free(m->source);
        m->source = xasprintf("builtin:%s", bf->name);
    }
    return m;
}

static const char *const rope_style_names[] = {"none", "half", "complex",
                                               "matrix"};

const char *
rope_style_name(enum rope_style r)
{
    return (unsigned)r < sizeof rope_style_names / sizeof *rope_style_names
               ? rope_style_names[r]
               : "?";
}

int
rope_style_parse(const char *s, enum rope_style *out, char **cause)
{
    for (int r = ROPE_HALF; r <= ROPE_MATRIX; r++)
        if (strcmp(s, rope_style_names[r]) == 0) {
            *out = (enum rope_style)r;
            return 0;
        }
    bool b;
    char *why = NULL;
    if (units_parse_bool(s, &b, &why) == 0) {
        *out = b ? ROPE_HALF : ROPE_NONE;
        return 0;
    }
    free(why);
    *cause = xasprintf("'%s' is not a rotary embedding (write half, complex, "
                       "matrix, true or false)", s);
    return -1;
}
