// Generated programs of about n nodes, in the text format, in the shapes that stress Stax's
// own compile time: pointwise chains, values read twice by their user, transpose/reshape
// chains whose views compose index arithmetic, many outputs of one input, and wide DAGs of
// products and row sums joined by an add tree, and blocks that fuse in every direction. Used by the
// compile-time benchmark and the scaling tests.
#pragma once

#include <string>

namespace stax::fuzz {

std::string chain_program(int n);
std::string self_read_program(int n);
std::string view_chain_program(int n);
std::string many_outputs_program(int n);
std::string wide_dag_program(int n);
// Blocks of four nodes (a product of the shared input, its row sum, the normalized row, an
// add into a running total): vertical fusions across reductions, horizontal ones between the
// blocks' readers of the input, over several rounds, so that greedy fusion accepts about one
// fusion per node and its peak checks run on every round.
std::string many_fusions_program(int n);

}  // namespace stax::fuzz
