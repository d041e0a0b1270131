#!/usr/bin/python3
"""A grid-world environment plugin for Gray, written in Python.

    chmod +x gridworld.py
    train --env plugin:./plugins/examples/python-env/gridworld.py --alg PPO

It behaves like the Go example (plugins/examples/gridworld): walk from the top
row to the bottom-right corner; -0.01 a step, +1 at the goal.
"""

import random
import sys

sys.dont_write_bytecode = True  # keep the plugin folder clean

from gray_plugin import box, discrete, serve_env  # noqa: E402


class GridWorld:
    def __init__(self, config):
        unknown = set(config) - {"size", "max_steps"}
        if unknown:
            raise ValueError("unknown config keys %s (known: size, max_steps)" % sorted(unknown))
        self.size = int(config.get("size", 5))
        self.max_steps = int(config.get("max_steps", 50))
        self.observation_space = box(0.0, 1.0, [2])
        self.action_space = discrete(4)

    def _obs(self):
        d = float(self.size - 1)
        return [self.x / d, self.y / d]

    def reset(self, seed):
        rng = random.Random(seed)
        self.x, self.y, self.steps = rng.randrange(self.size - 1), 0, 0
        return self._obs()

    def step(self, action):
        a = int(action[0])
        if a == 0:
            self.y = max(self.y - 1, 0)
        elif a == 1:
            self.x = min(self.x + 1, self.size - 1)
        elif a == 2:
            self.y = min(self.y + 1, self.size - 1)
        elif a == 3:
            self.x = max(self.x - 1, 0)
        else:
            raise ValueError("action %r is not one of 0, 1, 2, 3" % (a,))
        self.steps += 1
        if self.x == self.size - 1 and self.y == self.size - 1:
            return self._obs(), 1.0, True, False
        return self._obs(), -0.01, False, self.steps >= self.max_steps


if __name__ == "__main__":
    serve_env("GridWorld-py", GridWorld)
