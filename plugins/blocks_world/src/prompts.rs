//! The paper's prompts for Blocks World (The Illusion of Thinking,
//! appendix A.1.4) as its authors wrote them, the paper's instance of `n`
//! blocks filled in (what differs from the appendix's text, and why: docs/games.md).

use ludus_sdk::puzzle_prompts::Paper;

use crate::rules::{MAX_BLOCKS, Stacks, paper_instance};

pub const PAPER: Paper = Paper {
    puzzle: "Blocks World",
    system: SYSTEM,
    user,
    n: (2, MAX_BLOCKS),
    n_means: "the number of blocks",
    k_means: None,
    moves_format: "moves = [[block, from stack, to stack], ...]",
};

const SYSTEM: &str = "You are a helpful assistant. Solve this puzzle for me.
In this puzzle, there are stacks of blocks, and the goal is to rearrange them into a target configuration using a sequence of moves where:
• Only the topmost block from any stack can be moved.
• A block can be placed either on an empty position or on top of another block.
Example: With initial state [[\"A\", \"B\"], [\"C\"], []] and goal state [[\"A\"], [\"B\"], [\"C\"]], a solution might be:
moves = [[\"C\", 1, 2], [\"B\", 0, 1]]
This means: Move block C from stack 1 to stack 2, then move block B from stack 0 to stack 1.
Requirements:
• When exploring potential solutions in your thinking process, always include the corresponding complete list of moves.
• Ensure your final answer also includes the complete list of moves for final solution in the format: moves = [[block, from stack, to stack], ...]";

/// `Stack 0: A B (top)` per stack, bottom first; an empty one `(empty)`.
fn stacks(s: &Stacks) -> String {
    s.iter()
        .enumerate()
        .map(|(i, blocks)| match blocks.is_empty() {
            true => format!("Stack {i}: (empty)"),
            false => format!("Stack {i}: {} (top)", blocks.join(" ")),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn user(n: u32, _k: Option<u32>) -> Result<String, String> {
    let (start, goal) = paper_instance(n)?;
    Ok(format!(
        "I have a puzzle with {n} blocks.
Initial state:
{}
Goal state:
{}
Find the minimum sequence of moves to transform the initial state into the goal state. Remember that only the topmost block of each stack can be moved.",
        stacks(&start),
        stacks(&goal)
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_papers_instance_is_written_out() {
        let u = super::user(4, None).unwrap();
        assert!(u.contains("Initial state:\nStack 0: A B (top)\nStack 1: C D (top)\nStack 2: (empty)\n"), "{u}");
        assert!(u.contains("Goal state:\nStack 0: D B C A (top)\nStack 1: (empty)\nStack 2: (empty)\n"), "{u}");
    }
}
