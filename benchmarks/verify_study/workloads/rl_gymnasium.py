"""REINFORCE on gymnasium's CartPole-v1 (the study's RL kind): one episode per update, returns
logged to a CSV file, the policy saved each episode."""

import csv
import os

import gymnasium as gym
import torch
from torch import nn

env = gym.make("CartPole-v1")
policy = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
os.makedirs("runs/reinforce", exist_ok=True)
with open("runs/reinforce/returns.csv", "a", newline="") as handle:
    log = csv.writer(handle)
    for episode in range(200):
        state, _ = env.reset(seed=episode)
        log_probs, rewards, done = [], [], False
        while not done:
            dist = torch.distributions.Categorical(logits=policy(torch.as_tensor(state, dtype=torch.float32)))
            action = dist.sample()
            state, reward, terminated, truncated, _ = env.step(action.item())
            log_probs.append(dist.log_prob(action))
            rewards.append(reward)
            done = terminated or truncated
        returns, g = [], 0.0
        for r in reversed(rewards):
            g = r + 0.99 * g
            returns.insert(0, g)
        returns = torch.tensor(returns)
        returns = (returns - returns.mean()) / (returns.std() + 1e-8)
        loss = -(torch.stack(log_probs) * returns).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        log.writerow([episode, sum(rewards)])
        torch.save(policy.state_dict(), "runs/reinforce/policy.pt")
