/*
 * report_dat.h: is a file the timeline or memory .dat `fsdpsim report`
 * is given it as?
 *
 * `report` checks each input before gnuplot sees it, so that a memory
 * .dat given as --timeline, an empty file or a binary one gets one
 * message naming the file and line instead of a meaningless plot or
 * gnuplot's own text.
 */
#ifndef FSDPSIM_REPORT_DAT_H
#define FSDPSIM_REPORT_DAT_H

enum report_dat_kind { REPORT_DAT_TIMELINE, REPORT_DAT_MEMORY };

/* "--timeline" or "--memory"; "a timeline .dat" or "a memory .dat". */
const char *report_dat_flag(enum report_dat_kind kind);
const char *report_dat_what(enum report_dat_kind kind);

/* TEXT, read from PATH, as KIND: 0, or -1 with *cause (caller frees)
 * naming "FLAG PATH:LINE".  *last_us is raised to the latest time the
 * file holds (timeline: end_us; memory: t_us). */
int report_dat_check(const char *text, enum report_dat_kind kind,
                     const char *path, double *last_us, char **cause);

#endif
