# Include from another Makefile to build against librrlog:
#   include $(RRLOG_DIR)/rrlog.mk     (RRLOG_DIR: path to rrlog/)
RRLOG_DIR    ?= $(dir $(lastword $(MAKEFILE_LIST)))
RRLOG_CFLAGS := -I$(RRLOG_DIR)include -I$(RRLOG_DIR)gen
RRLOG_LIB    := $(RRLOG_DIR)librrlog.a
RRLOG_LIBS   := $(RRLOG_LIB) -lprotobuf-c -lzstd -pthread
