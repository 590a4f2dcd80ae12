// `require('tfjs-node-rs/configure')`: runtime options set before tfjs-node-rs starts TF.
import type {node} from './index';

export declare function configure(options: node.RuntimeOptions): void;
