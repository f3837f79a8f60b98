/*
 * net_platform_check.c: the checks a SimGrid platform file passes before
 * SimGrid reads it (see net_platform.h).
 *
 * SimGrid 3.32 aborts the process on a platform it cannot parse (its
 * flexml parser validates against the DTD) and on units it does not know
 * (toolchain.md §2.2).  This is a small XML scanner, not a validating
 * parser: it checks what users get wrong when they edit a platform (tags,
 * quotes, the DOCTYPE, element and attribute names of the DTD 4.1, the
 * required attributes, units, ids defined once and before use, and the
 * job's hosts) and names the file and line.  What it does not check (the
 * order of elements inside a zone, routing) is left to the probe in
 * net_simgrid.c, which loads the file in a child process first.
 */
#include "net_platform.h"
#include "textfile.h"
#include "xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* What SimGrid 3.32's DTD (version 4.1) allows, with each element's
 * required attributes and the attributes that hold a quantity with a unit.
 * Elements the backend cannot use (disks, storage, traces, actors) are
 * refused: a platform for fsdpsim describes hosts and links. */
struct elem_rule {
    const char *name;
    const char *required;   /* space-separated */
    const char *optional;   /* space-separated */
};

static const struct elem_rule rules[] = {
    {"platform", "version", ""},
    {"config", "", "id"},
    {"prop", "id value", ""},
    {"zone", "id routing", ""},
    {"AS", "id routing", ""},
    {"cluster", "id prefix suffix radical speed bw lat",
     "core sharing_policy topology topo_parameters bb_bw bb_lat "
     "bb_sharing_policy limiter_link loopback_bw loopback_lat router_id"},
    {"cabinet", "id prefix suffix radical speed bw lat", ""},
    {"host", "id speed", "core availability_file state_file coordinates "
     "pstate"},
    {"router", "id", "coordinates"},
    {"link", "id bandwidth", "latency sharing_policy bandwidth_file "
     "latency_file state_file"},
    {"backbone", "id bandwidth latency", ""},
    {"host_link", "id up down", ""},
    {"peer", "id speed bw_in bw_out", "lat coordinates availability_file "
     "state_file"},
    {"route", "src dst", "symmetrical"},
    {"zoneRoute", "src dst gw_src gw_dst", "symmetrical"},
    {"ASroute", "src dst gw_src gw_dst", "symmetrical"},
    {"bypassRoute", "src dst", ""},
    {"bypassZoneRoute", "src dst gw_src gw_dst", ""},
    {"link_ctn", "id", "direction"},
    {NULL, NULL, NULL}};

enum quantity { Q_NONE, Q_BW, Q_LAT, Q_SPEED };

static enum quantity
attr_quantity(const char *attr)
{
    if (!strcmp(attr, "bw") || !strcmp(attr, "bandwidth")
        || !strcmp(attr, "bb_bw") || !strcmp(attr, "loopback_bw")
        || !strcmp(attr, "bw_in") || !strcmp(attr, "bw_out"))
        return Q_BW;
    if (!strcmp(attr, "lat") || !strcmp(attr, "latency")
        || !strcmp(attr, "bb_lat") || !strcmp(attr, "loopback_lat"))
        return Q_LAT;
    if (!strcmp(attr, "speed"))
        return Q_SPEED;
    return Q_NONE;
}

/* Units SimGrid 3.32 accepts (xbt/parse_units.cpp): without one it
 * aborts. */
static const char *const bw_units[] = {
    "Bps", "kBps", "KBps", "MBps", "GBps", "TBps", "PBps", "EBps",
    "KiBps", "MiBps", "GiBps", "TiBps", "PiBps", "EiBps",
    "bps", "kbps", "Kbps", "Mbps", "Gbps", "Tbps", "Pbps", "Ebps",
    "Kibps", "Mibps", "Gibps", "Tibps", "Pibps", "Eibps", NULL};
static const char *const lat_units[] = {
    "w", "d", "h", "m", "s", "ms", "us", "ns", "ps", NULL};
static const char *const speed_units[] = {
    "f", "kf", "Kf", "Mf", "Gf", "Tf", "Pf", "Ef", "Zf", "yf", NULL};

/* One value: a non-negative finite number and one of the units. */
static bool
quantity_ok(const char *v, enum quantity q)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || errno != 0 || !isfinite(x) || x < 0)
        return false;
    const char *const *u = q == Q_BW ? bw_units
                           : q == Q_LAT ? lat_units : speed_units;
    for (; *u; u++)
        if (strcmp(end, *u) == 0)
            return true;
    return false;
}

static bool
word_in(const char *list, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = list; *p;) {
        while (*p == ' ')
            p++;
        size_t m = strcspn(p, " ");
        if (m == n && strncmp(p, w, n) == 0)
            return true;
        p += m;
    }
    return false;
}

struct xattr {
    char *name;
    char *value;
};

/* Ids declared so far, by kind, for "defined before use" checks. */
enum id_kind { ID_ZONE, ID_HOST, ID_ROUTER, ID_LINK, ID_KINDS };

/* Open addressing on FNV-1a: a 1024-GPU platform has 16,256 routes,
 * each naming four ids, against some 1,300 ids. */
struct idset {
    char **slots;
    size_t n, cap;              /* cap: a power of two, or 0 */
};

struct checker {
    const char *text, *p, *origin;
    int line;
    char *err;
    int err_line;
    struct idset ids[ID_KINDS];
    bool doctype, root_seen, root_closed;
    char *stack[64];
    int depth;
};

static void
fail(struct checker *c, char *msg)
{
    if (c->err == NULL) {
        c->err = msg;
        c->err_line = c->line;
    } else {
        free(msg);
    }
}

static size_t
id_hash(const char *id)
{
    size_t h = 14695981039346656037u;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        h = (h ^ *p) * 1099511628211u;
    return h;
}

static bool
id_has(const struct idset *s, const char *id)
{
    if (s->cap == 0)
        return false;
    for (size_t i = id_hash(id) & (s->cap - 1); s->slots[i];
         i = (i + 1) & (s->cap - 1))
        if (strcmp(s->slots[i], id) == 0)
            return true;
    return false;
}

static void
idset_put(struct idset *s, const char *id)
{
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        char **slots = xcalloc(cap, sizeof *slots);
        for (size_t k = 0; k < s->cap; k++) {
            if (s->slots[k] == NULL)
                continue;
            size_t i = id_hash(s->slots[k]) & (cap - 1);
            while (slots[i])
                i = (i + 1) & (cap - 1);
            slots[i] = s->slots[k];
        }
        free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    size_t i = id_hash(id) & (s->cap - 1);
    while (s->slots[i])
        i = (i + 1) & (s->cap - 1);
    s->slots[i] = xstrdup(id);
    s->n++;
}

static bool
id_any(const struct checker *c, const char *id)
{
    for (int k = 0; k < ID_KINDS; k++)
        if (id_has(&c->ids[k], id))
            return true;
    return false;
}

static void
id_add(struct checker *c, enum id_kind k, const char *id)
{
    struct idset *s = &c->ids[k];
    if (k != ID_LINK && id_any(c, id)) {
        fail(c, xasprintf("id '%s' is defined twice (ids of zones, hosts "
                          "and routers must be unique)", id));
        return;
    }
    if (k == ID_LINK && id_has(s, id)) {
        fail(c, xasprintf("link '%s' is defined twice", id));
        return;
    }
    idset_put(s, id);
}

static void
advance(struct checker *c, size_t n)
{
    for (size_t i = 0; i < n && *c->p; i++, c->p++)
        if (*c->p == '\n')
            c->line++;
}

static const char *
attr_get(const struct xattr *a, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(a[i].name, name) == 0)
            return a[i].value;
    return NULL;
}

/* A cluster's hosts are PREFIX<k>SUFFIX for every k of its radical
 * ("0-7", "0-3,8,10-11"); routers are router_id, or
 * PREFIX<id>_router SUFFIX as SimGrid names them by default. */
static void
add_cluster_ids(struct checker *c, const struct xattr *a, int n)
{
    const char *id = attr_get(a, n, "id"), *pre = attr_get(a, n, "prefix");
    const char *suf = attr_get(a, n, "suffix");
    const char *rad = attr_get(a, n, "radical");
    const char *router = attr_get(a, n, "router_id");
    id_add(c, ID_ZONE, id);
    for (const char *p = rad; *p && c->err == NULL;) {
        char *end;
        long lo = strtol(p, &end, 10), hi = lo;
        /* SimGrid reads radicals as int; bounding them here also keeps
         * the k++ below from overflowing at LONG_MAX. */
        if (end == p || lo < 0 || lo > INT_MAX)
            goto bad;
        if (*end == '-') {
            p = end + 1;
            hi = strtol(p, &end, 10);
            if (end == p || hi < lo || hi > INT_MAX)
                goto bad;
        }
        if (hi - lo > 1000000)
            goto bad;
        for (long k = lo; k <= hi && c->err == NULL; k++) {
            char *h = xasprintf("%s%ld%s", pre, k, suf);
            id_add(c, ID_HOST, h);
            free(h);
        }
        if (*end == ',')
            end++;
        else if (*end != '\0')
            goto bad;
        p = end;
    }
    if (c->err == NULL) {
        char *r = router ? xstrdup(router)
                         : xasprintf("%s%s_router%s", pre, id, suf);
        id_add(c, ID_ROUTER, r);
        free(r);
    }
    return;
bad:
    fail(c, xasprintf("cluster '%s': radical '%s' is not a list of numbers "
                      "and ranges (write e.g. radical=\"0-7\")", id, rad));
}

/* The checks of one start tag, its attributes parsed. */
static void
check_element(struct checker *c, const char *name, const struct xattr *a,
              int n)
{
    const struct elem_rule *r = rules;
    while (r->name && strcmp(r->name, name) != 0)
        r++;
    if (r->name == NULL) {
        fail(c, xasprintf("element <%s> is not one fsdpsim accepts in a "
                          "platform (use zone, cluster, host, router, link, "
                          "route, zoneRoute, link_ctn, config, prop)",
                          name));
        return;
    }
    if (!c->root_seen && strcmp(name, "platform") != 0) {
        fail(c, xasprintf("the root element is <%s>; a SimGrid platform "
                          "starts with <platform version=\"4.1\">", name));
        return;
    }
    if (c->root_seen && strcmp(name, "platform") == 0) {
        fail(c, xstrdup("a second <platform> element (there is one root)"));
        return;
    }
    for (int i = 0; i < n; i++) {
        if (!word_in(r->required, a[i].name)
            && !word_in(r->optional, a[i].name)) {
            fail(c, xasprintf("<%s> has no attribute '%s' in SimGrid's "
                              "DTD 4.1", name, a[i].name));
            return;
        }
        enum quantity q = attr_quantity(a[i].name);
        if (q != Q_NONE && strcmp(name, "platform") != 0) {
            /* A host's speed may list one per power state. */
            char *v = xstrdup(a[i].value);
            bool ok = true;
            for (char *s = strtok(v, ","); s && ok; s = strtok(NULL, ","))
                ok = quantity_ok(s, q);
            free(v);
            if (!ok || a[i].value[0] == '\0') {
                fail(c, xasprintf("<%s> %s=\"%s\": not a %s with a unit "
                                  "(write e.g. %s)", name, a[i].name,
                                  a[i].value, q == Q_BW ? "bandwidth"
                                  : q == Q_LAT ? "latency" : "speed",
                                  q == Q_BW ? "\"25GBps\" or \"200Gbps\""
                                  : q == Q_LAT ? "\"5us\"" : "\"1Gf\""));
                return;
            }
        }
    }
    for (const char *p = r->required; *p;) {
        while (*p == ' ')
            p++;
        size_t m = strcspn(p, " ");
        char *w = xstrndup(p, m);
        p += m;
        bool have = attr_get(a, n, w) != NULL;
        if (!have)
            fail(c, xasprintf("<%s> lacks the required attribute '%s'",
                              name, w));
        free(w);
        if (!have)
            return;
    }
    if (strcmp(name, "platform") == 0) {
        c->root_seen = true;
        if (!c->doctype)
            fail(c, xstrdup("no <!DOCTYPE platform SYSTEM \"https://"
                            "simgrid.org/simgrid.dtd\"> before <platform> "
                            "(SimGrid needs it: add it as the second "
                            "line)"));
        else if (strtod(attr_get(a, n, "version"), NULL) < 4)
            fail(c, xasprintf("platform version \"%s\" is older than 4 "
                              "(update it with simgrid_update_xml)",
                              attr_get(a, n, "version")));
        return;
    }
    const char *id = attr_get(a, n, "id");
    if (!strcmp(name, "zone") || !strcmp(name, "AS"))
        id_add(c, ID_ZONE, id);
    else if (!strcmp(name, "host") || !strcmp(name, "peer"))
        id_add(c, ID_HOST, id);
    else if (!strcmp(name, "router"))
        id_add(c, ID_ROUTER, id);
    else if (!strcmp(name, "link") || !strcmp(name, "backbone"))
        id_add(c, ID_LINK, id);
    else if (!strcmp(name, "cluster") || !strcmp(name, "cabinet"))
        add_cluster_ids(c, a, n);
    else if (!strcmp(name, "link_ctn") && !id_has(&c->ids[ID_LINK], id))
        fail(c, xasprintf("<link_ctn id=\"%s\">: no link '%s' is defined "
                          "above it", id, id));
    else if (!strcmp(name, "zoneRoute") || !strcmp(name, "ASroute")
             || !strcmp(name, "route") || !strcmp(name, "bypassRoute")
             || !strcmp(name, "bypassZoneRoute")) {
        static const char *const ends[] = {"src", "dst", "gw_src", "gw_dst"};
        for (int i = 0; i < 4 && c->err == NULL; i++) {
            const char *v = attr_get(a, n, ends[i]);
            if (v != NULL && !id_any(c, v))
                fail(c, xasprintf("<%s %s=\"%s\">: nothing named '%s' is "
                                  "defined above it", name, ends[i], v, v));
        }
    }
}

/* Read a name at c->p (letters, digits, _ - . :); caller frees. */
static char *
read_name(struct checker *c)
{
    const char *s = c->p;
    while (isalnum((unsigned char)*c->p) || (*c->p && strchr("_-.:", *c->p)))
        c->p++;
    return c->p > s ? xstrndup(s, (size_t)(c->p - s)) : NULL;
}

static void
skip_space(struct checker *c)
{
    while (isspace((unsigned char)*c->p))
        advance(c, 1);
}

/* Skip past TERM; false when the text ends first. */
static bool
skip_past(struct checker *c, const char *term)
{
    const char *e = strstr(c->p, term);
    if (e == NULL)
        return false;
    advance(c, (size_t)(e - c->p) + strlen(term));
    return true;
}

/* One tag starting at '<'.  Returns false to stop. */
static bool
scan_tag(struct checker *c)
{
    if (strncmp(c->p, "<!--", 4) == 0) {
        int start = c->line;
        if (!skip_past(c, "-->")) {
            c->line = start;
            fail(c, xstrdup("comment '<!--' is never closed with '-->'"));
            return false;
        }
        return true;
    }
    if (strncmp(c->p, "<?", 2) == 0) {
        if (!skip_past(c, "?>")) {
            fail(c, xstrdup("'<?' is never closed with '?>'"));
            return false;
        }
        return true;
    }
    if (strncmp(c->p, "<!DOCTYPE", 9) == 0) {
        if (c->root_seen) {
            fail(c, xstrdup("<!DOCTYPE> after the root element (put it "
                            "before <platform>)"));
            return false;
        }
        const char *e = strchr(c->p, '>');
        if (e == NULL) {
            fail(c, xstrdup("<!DOCTYPE is never closed with '>'"));
            return false;
        }
        char *d = xstrndup(c->p, (size_t)(e - c->p));
        bool ok = strstr(d, "platform") != NULL
                  && strstr(d, "simgrid.dtd") != NULL;
        free(d);
        if (!ok) {
            fail(c, xstrdup("the DOCTYPE is not SimGrid's (write <!DOCTYPE "
                            "platform SYSTEM \"https://simgrid.org/"
                            "simgrid.dtd\">)"));
            return false;
        }
        c->doctype = true;
        advance(c, (size_t)(e - c->p) + 1);
        return true;
    }
    advance(c, 1);
    bool closing = *c->p == '/';
    if (closing)
        advance(c, 1);
    char *name = read_name(c);
    if (name == NULL) {
        fail(c, xstrdup("'<' not followed by an element name (write "
                        "'&lt;' for a literal '<')"));
        return false;
    }
    if (c->root_closed) {
        fail(c, xasprintf("<%s%s> after the closing </platform>",
                          closing ? "/" : "", name));
        free(name);
        return false;
    }
    if (closing) {
        skip_space(c);
        bool ok = *c->p == '>';
        if (!ok)
            fail(c, xasprintf("</%s must end with '>'", name));
        else if (c->depth == 0 || strcmp(c->stack[c->depth - 1], name) != 0)
            fail(c, c->depth == 0
                        ? xasprintf("</%s> closes nothing", name)
                        : xasprintf("</%s> closes <%s> (close the inner "
                                    "element first)", name,
                                    c->stack[c->depth - 1]));
        else {
            free(c->stack[--c->depth]);
            if (c->depth == 0)
                c->root_closed = true;
            advance(c, 1);
        }
        free(name);
        return c->err == NULL;
    }
    struct xattr attrs[32];
    int n = 0;
    bool self_close = false;
    for (;;) {
        skip_space(c);
        if (*c->p == '\0') {
            fail(c, xasprintf("the file ends inside <%s> (is it complete?)",
                              name));
            break;
        }
        if (*c->p == '>') {
            advance(c, 1);
            break;
        }
        if (c->p[0] == '/' && c->p[1] == '>') {
            advance(c, 2);
            self_close = true;
            break;
        }
        char *an = read_name(c);
        if (an == NULL || n == 32) {
            fail(c, an == NULL
                        ? xasprintf("<%s: expected an attribute, '>' or "
                                    "'/>'", name)
                        : xasprintf("<%s> has more than 32 attributes",
                                    name));
            free(an);
            break;
        }
        skip_space(c);
        bool eq = *c->p == '=';
        if (eq) {
            advance(c, 1);
            skip_space(c);
        }
        char q = *c->p;
        if (!eq || (q != '"' && q != '\'')) {
            fail(c, xasprintf("<%s %s: expected =\"value\"", name, an));
            free(an);
            break;
        }
        advance(c, 1);
        const char *e = strchr(c->p, q);
        if (e == NULL || memchr(c->p, '<', (size_t)(e - c->p))) {
            fail(c, xasprintf("<%s %s=: the value's quote is never closed",
                              name, an));
            free(an);
            break;
        }
        if (attr_get(attrs, n, an) != NULL) {
            fail(c, xasprintf("<%s> gives attribute '%s' twice", name, an));
            free(an);
            break;
        }
        attrs[n].name = an;
        attrs[n].value = xstrndup(c->p, (size_t)(e - c->p));
        n++;
        advance(c, (size_t)(e - c->p) + 1);
    }
    if (c->err == NULL)
        check_element(c, name, attrs, n);
    for (int i = 0; i < n; i++) {
        free(attrs[i].name);
        free(attrs[i].value);
    }
    if (c->err == NULL && !self_close) {
        if (c->depth == 64)
            fail(c, xstrdup("elements nest more than 64 deep"));
        else {
            c->stack[c->depth++] = name;
            name = NULL;
        }
    }
    free(name);
    return c->err == NULL;
}

int
net_platform_check_text(const char *text, const char *origin, int nodes,
                        int gpn, char **cause)
{
    struct checker c;
    memset(&c, 0, sizeof c);
    c.text = c.p = text;
    c.origin = origin;
    c.line = 1;
    while (*c.p && c.err == NULL) {
        if (*c.p == '<') {
            if (!scan_tag(&c))
                break;
        } else if (isspace((unsigned char)*c.p)) {
            advance(&c, 1);
        } else {
            fail(&c, xasprintf("text '%c' outside any tag (SimGrid "
                               "platforms hold only elements)", *c.p));
        }
    }
    if (c.err == NULL && !c.root_seen)
        fail(&c, xstrdup("no <platform> element (is this a SimGrid "
                         "platform file?)"));
    else if (c.err == NULL && c.depth > 0)
        fail(&c, xasprintf("the file ends inside <%s> (close it)",
                           c.stack[c.depth - 1]));
    for (int i = 0; i < nodes && c.err == NULL; i++)
        for (int g = 0; g < gpn && c.err == NULL; g++) {
            char *h = xasprintf("node%d-gpu%d", i, g);
            if (!id_has(&c.ids[ID_HOST], h)) {
                c.line = 0;
                fail(&c, xasprintf("no host '%s': the job's %d nodes x %d "
                                   "GPUs need hosts node<i>-gpu<g> (start "
                                   "from 'fsdpsim topology --simgrid-xml')",
                                   h, nodes, gpn));
            }
            free(h);
        }
    int rc = 0;
    if (c.err != NULL) {
        if (c.err_line > 0)
            *cause = xasprintf("%s:%d: %s", origin, c.err_line, c.err);
        else
            *cause = xasprintf("%s: %s", origin, c.err);
        free(c.err);
        rc = -1;
    }
    for (int k = 0; k < ID_KINDS; k++) {
        for (size_t i = 0; i < c.ids[k].cap; i++)
            free(c.ids[k].slots[i]);
        free(c.ids[k].slots);
    }
    for (int i = 0; i < c.depth; i++)
        free(c.stack[i]);
    return rc;
}

/* Platforms for 1024 GPUs are about 100 kB; 64 MiB is not a platform. */
#define PLATFORM_MAX_BYTES ((size_t)64 << 20)

int
net_platform_check(const char *path, int nodes, int gpn, char **cause)
{
    char *why = NULL;
    char *text = textfile_load(path, PLATFORM_MAX_BYTES,
                               "is it a SimGrid platform file?", &why);
    if (text == NULL) {
        *cause = xasprintf("--platform %s", why);
        free(why);
        return -1;
    }
    int rc = net_platform_check_text(text, path, nodes, gpn, cause);
    free(text);
    return rc;
}
