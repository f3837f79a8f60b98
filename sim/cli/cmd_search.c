/*
 * cmd_search.c: option handling shared by the commands that simulate
 * many points (sweep, tune, plan); see cmd_search.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "cmd_search.h"
#include "cmd.h"
#include "search.h"
#include "setup.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

int
search_take_opt(int argc, char **argv, int *i, const char *long_name,
                const char *short_name, const char **val)
{
    const char *a = argv[*i];
    size_t n = strlen(long_name);
    if (strncmp(a, long_name, n) == 0 && a[n] == '=') {
        *val = a + n + 1;
        return 1;
    }
    if (strcmp(a, long_name) == 0
        || (short_name && strcmp(a, short_name) == 0)) {
        *val = *i + 1 < argc ? argv[++*i] : NULL;
        return 1;
    }
    /* "-j4", the value joined to a short option, as getopt takes it */
    if (short_name && strncmp(a, short_name, 2) == 0 && a[2] != '\0') {
        *val = a + 2;
        return 1;
    }
    return 0;
}

int
search_split_args(const struct cmd_entry *cmd, int argc, char **argv,
                  const struct search_opt *own, int n_own, char **base,
                  int *base_argc)
{
    int nb = *base_argc;
    for (int i = 1; i < argc; i++) {
        const char *name = argv[i], *v = NULL;
        if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0) {
            cmd->help(stdout);
            return 0;
        }
        int k;
        for (k = 0; k < n_own; k++)
            if (search_take_opt(argc, argv, &i, own[k].long_name,
                                own[k].short_name, &v))
                break;
        if (k == n_own) {
            base[nb++] = argv[i];
            continue;
        }
        if (v == NULL)
            return cmd_option_error(cmd->name, OPTION_NEEDS_VALUE, name);
        if (*v == '\0')
            /* "--plot=" would write "-tune.png", "--out=" nothing useful. */
            return cmd_errorf(cmd->name, 0, "%s: the value is empty",
                              own[k].long_name);
        if (own[k].val) {
            *own[k].val = v;
        } else {
            struct search_list *l = own[k].list;
            l->v = xrealloc(l->v, sizeof *l->v * (l->n + 1));
            l->v[l->n++] = v;
        }
    }
    *base_argc = nb;
    return CMD_RUN;
}

int
search_check_base(const char *cmd, const char *why, int base_argc,
                  char **base)
{
    struct run r;
    char *cause = NULL;
    struct search_args a;
    search_args_init(&a, base_argc, base);
    enum setup_status st = setup_parse_args(&r, cmd, a.argc, a.argv, &cause);
    search_args_free(&a);
    if (st == SETUP_USAGE) {
        setup_free(&r);
        return cmd_setup_error(cmd, st, cause);
    }
    free(cause);
    const char *opt = r.cfg.trace_path ? "--trace"
                      : r.cfg.timeline_path ? "--timeline"
                      : r.cfg.memory_path ? "--memory"
                      : r.cfg.metrics_path ? "--metrics"
                      : r.cfg.format == FORMAT_JSON ? "--format" : NULL;
    setup_free(&r);
    if (opt) {
        return cmd_errorf(cmd, 0, "%s does not apply to %s, which %s "
                          "(simulate one point to get it)", opt, cmd, why);
    }
    return 0;
}

void
search_list_free(struct search_list *l)
{
    free(l->v);
    l->v = NULL;
    l->n = 0;
}
