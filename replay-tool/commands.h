/*
 * replay-vm subcommands.  To add one: write cmd_NAME.c with
 *     int cmd_NAME(int argc, char **argv);   (argv[0] is "NAME")
 * declare it here, add a row to the table in main.c and the object to
 * the Makefile.  Every command must answer --help with examples.
 */
#ifndef REPLAY_TOOL_COMMANDS_H
#define REPLAY_TOOL_COMMANDS_H

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

int cmd_info(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_edit(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_crew_stats(int argc, char **argv);

#endif
