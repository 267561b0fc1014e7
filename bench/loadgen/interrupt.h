// ctrl-C: the first SIGINT asks the run to stop issuing and drain, the second to abandon what is
// in flight. The handler only counts; runs poll the count.
#pragma once

namespace loadgen {

void install_sigint_handler();
int sigint_count();     // SIGINTs received since install (0 without the handler)
void raise_interrupt(); // counts as one SIGINT (for tests and programs embedding the runner)
void reset_interrupts();

} // namespace loadgen
