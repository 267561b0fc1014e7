// A program embedding actorserve: start the runtime in our own actor system, ask two questions
// in one conversation, print the answers as they stream, then read the metrics.
//
//   build/bin/chat_client models/SmolLM2-135M-Instruct.Q4_1.gguf
#include <caf/all.hpp>

#include <cstdio>
#include <iostream>

#include "include/actorserve/runtime.h"

using namespace std::chrono_literals;

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]);
        return 2;
    }
    caf::actor_system_config cfg;
    actorserve::runtime::tune(cfg); // CAF's workers sleep when idle, leaving the cores to the engine
    caf::actor_system sys{cfg};

    actorserve::runtime_config rc;
    rc.model_path = argv[1];
    std::string err;
    auto rt = actorserve::runtime::start(sys, rc, err);
    if (!rt) {
        std::fprintf(stderr, "chat_client: error: %s\n", err.c_str());
        return 1;
    }

    caf::scoped_actor self{sys};
    actorserve::chat_session chat = rt->open_session();
    int rc_exit = 0;
    const char *questions[] = {"What is the capital of France?", "And what river runs through it?"};
    for (int64_t id = 0; id < 2; ++id) {
        actorserve::chat_request req;
        req.id = id;
        req.messages = {{"user", questions[id]}};
        req.sampling.temperature = 0.0f; // greedy: the same answer every run
        req.max_tokens = 64;
        std::cout << "> " << questions[id] << "\n";
        self->send(chat, std::move(req));
        for (bool running = true; running;) {
            self->receive(
                [&](const actorserve::chat_delta &d) { std::cout << d.text << std::flush; },
                [&](const actorserve::chat_done &d) {
                    std::cout << "\n[" << actorserve::name(d.finish_reason) << ", " << d.usage.prompt_tokens << " prompt tokens ("
                              << d.usage.cached_tokens << " cached), " << d.usage.completion_tokens
                              << " generated, first text after " << d.ttft_ms << " ms]\n";
                    running = false;
                },
                [&](const actorserve::chat_error &e) {
                    std::cerr << "chat_client: error: " << e.message << "\n";
                    rc_exit = 1;
                    running = false;
                },
                caf::after(60s) >> [&] { std::cerr << "chat_client: no answer\n"; rc_exit = 1; running = false; });
        }
    }
    self->request(rt->metrics(), 5s, actorserve::get_atom::value)
        .receive([](const actorserve::metrics_snapshot &m) {
            std::cout << "steps " << m.steps << ", generated " << m.generated_tokens << " tokens, prefix hits "
                      << m.prefix_hit_tokens << " tokens\n";
        }, [](caf::error &) {});
    self->send_exit(chat, caf::exit_reason::user_shutdown);
    return rc_exit;
}
