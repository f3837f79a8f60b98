/*
 * fuzz_runfile_sections.c: run files with sections ([run], unknown ones,
 * keys before and after them), and where each value's errors point.
 *
 * The first byte picks how the input is framed: as it is, under a
 * leading "[run]" line, or after a top-level "nodes = 2" line and a
 * "[run]" line (so the same key at the top and in the section, refused
 * as given twice, is reachable).  Invariants: a refusal names
 * "fuzz.ini:LINE:" with LINE inside the file (or, for a file that sets
 * nothing, says so); an accepted file's values
 * keep origins that name a line of it and their key; config_validate's
 * refusals, restated by config_blame, start with the file or a flag.
 */
#include "fuzz_util.h"
#include "runconf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
count_lines(const char *s)
{
    int n = 1;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* "fuzz.ini:LINE: ..." with 1 <= LINE <= max. */
static void
check_origin(const char *msg, int max)
{
    FUZZ_ASSERT(strncmp(msg, "fuzz.ini:", 9) == 0);
    char *end;
    long line = strtol(msg + 9, &end, 10);
    FUZZ_ASSERT(end != msg + 9 && *end == ':');
    FUZZ_ASSERT(line >= 1 && line <= max);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    static const char *const frames[] = {"", "[run]\n",
                                         "nodes = 2\n[run]\n"};
    const char *frame = frames[data[0] % 3];
    char *body = fuzz_text(data + 1, size - 1);
    if (body == NULL)
        return 0;
    size_t fl = strlen(frame), bl = strlen(body);
    char *s = malloc(fl + bl + 1);
    if (s == NULL)
        abort();
    memcpy(s, frame, fl);
    memcpy(s + fl, body, bl + 1);
    free(body);
    int lines = count_lines(s);

    struct run_config c;
    config_init(&c);
    char *cause = NULL;
    if (config_load_text(&c, s, "fuzz.ini", &cause) != 0) {
        FUZZ_ASSERT(cause != NULL);
        /* The one message about the whole file has no line. */
        if (strncmp(cause, "fuzz.ini: holds no settings", 27) != 0)
            check_origin(cause, lines);
        fuzz_check_cause(cause);
    } else {
        for (int i = 0; config_options[i].key; i++) {
            const char *o = config_origin(&c, config_options[i].key);
            if (strncmp(o, "--", 2) == 0)
                continue;       /* left at its default */
            check_origin(o, lines);
            /* "fuzz.ini:LINE: KEY" */
            const char *key = strchr(o + 9, ':') + 2;
            FUZZ_ASSERT(strcmp(key, config_options[i].key) == 0);
        }
        for (int i = 0; i < c.n_sets; i++)
            check_origin(config_set_origin(&c, i), lines);
        if (config_validate(&c, &cause) != 0) {
            FUZZ_ASSERT(cause != NULL);
            if (strncmp(cause, "--", 2) != 0)
                check_origin(cause, lines);
            fuzz_check_cause(cause);
        }
    }
    config_free(&c);
    free(s);
    return 0;
}
