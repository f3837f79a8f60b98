/*
 * cmd_search.h: option handling shared by the commands that simulate many
 * points (sweep, tune, plan): their own options split from the simulate
 * options every point starts from, and the check of those base options.
 * Errors are printed here (cmd_error), which is why this is command code
 * and not part of libfsdp.
 */
#ifndef FSDPSIM_CMD_SEARCH_H
#define FSDPSIM_CMD_SEARCH_H

/* Is argv[*i] the option long_name (or short_name), as "--opt V",
 * "--opt=V" or "-o V"?  Then *val is its value (NULL when missing) and *i
 * moves past it. */
int search_take_opt(int argc, char **argv, int *i, const char *long_name,
                    const char *short_name, const char **val);

/* Options a command takes besides the simulate options: a single value
 * (val) or a repeatable one (list, values in order). */
struct search_list {
    const char **v;
    int n;
};
struct search_opt {
    const char *long_name, *short_name;
    const char **val;
    struct search_list *list;
};
/* Split argv (argv[0] the command) into the command's own options and
 * the simulate options, appended to base from *base_argc on (base holds
 * argc + *base_argc entries).  CMD_RUN, or the exit status after CMD's
 * help (-h, --help) or after the message (a value missing or empty).
 * Lists are freed with search_list_free. */
struct cmd_entry;
int search_split_args(const struct cmd_entry *cmd, int argc, char **argv,
                      const struct search_opt *own, int n_own, char **base,
                      int *base_argc);
void search_list_free(struct search_list *l);

/* The base options alone must parse as simulate options (an unknown
 * option is an error before any point runs) and hold no output option;
 * why says what the command writes instead ("writes one CSV row per
 * point").  0, or an exit status after printing why. */
int search_check_base(const char *cmd, const char *why, int base_argc,
                      char **base);

#endif
