// tessel::linalg's and tessel::scipy::linalg's composed functions (linalg_composed.cpp)
// against values recorded from JAX 0.10.2 (tests/ops/linalg_composed_jax_values.py, next to
// this file), in several dtypes and with batched inputs; jit against eager; vmap against a
// loop; gradients against central finite differences in float64; and the errors for wrong
// ranks, shapes and orders.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "expect_error.h"
#include "ops/linalg_test_util.h"
#include "tessel/linalg.h"
#include "tessel/tessel.h"
#include "transforms/check_transforms.h"

namespace ts = tessel;
namespace la = tessel::linalg;
namespace sla = tessel::scipy::linalg;
using C = std::complex<double>;

namespace {

constexpr double N = std::numeric_limits<double>::quiet_NaN();
constexpr double I = std::numeric_limits<double>::infinity();

/// A value JAX computed: the case's name, the result's dtype, shape and elements.
struct JaxValue {
  const char* name;
  const char* dtype;
  ts::Shape shape;
  std::vector<double> re, im;
};

// Printed by linalg_composed_jax_values.py.
const JaxValue kJax[] = {
    {"vector_norm 2", "f32", {}, {3.9449334144592285}, {}},
    {"vector_norm 1 axis -1", "f32", {2, 3}, {2.75, 2.75, 2.5, 3.25, 2.0, 3.5}, {}},
    {"vector_norm inf axis 1", "f32", {2, 4}, {1.0, 1.25, 1.0, 0.75, 1.25, 1.0, 0.75, 1.25}, {}},
    {"vector_norm -inf axes 0 2", "f32", {3}, {0.25, 0.0, 0.25}, {}},
    {"vector_norm 0 axis 2 keepdims", "f32", {2, 3, 1}, {4.0, 3.0, 4.0, 4.0, 3.0, 4.0}, {}},
    {"vector_norm 3 axis 1", "f32", {2, 4}, {1.044834852218628, 1.5749013423919678, 1.044834852218628, 0.9894729256629944, 1.5749013423919678, 1.044834852218628, 0.9894729256629944, 1.437224268913269}, {}},
    {"vector_norm 0.5 axis -1", "f32", {2, 3}, {10.183541297912598, 8.214101791381836, 9.194524765014648, 12.13866901397705, 5.598076343536377, 13.324554443359375}, {}},
    {"vector_norm -1 axis 0", "f32", {3, 4}, {0.3571428656578064, 0.2083333283662796, 0.1875, 0.4285714030265808, 0.0, 0.0, 0.4285714030265808, 0.1875, 0.2083333283662796, 0.3571428656578064, 0.25, 0.3571428656578064}, {}},
    {"vector_norm c64 2 axis -1", "f32", {3}, {1.5811388492584229, 2.0310096740722656, 1.785357117652893}, {}},
    {"vector_norm c128 3", "f64", {}, {2.1935890626932415}, {}},
    {"vector_norm f64 2 axis 0", "f64", {4}, {1.620185174601965, 1.2747548783981961, 1.346291201783626, 1.346291201783626}, {}},
    {"vector_norm i32 2", "f32", {}, {7.416198253631592}, {}},
    {"norm none 3-D", "f32", {}, {3.9449334144592285}, {}},
    {"norm none 3-D keepdims", "f32", {1, 1, 1}, {3.9449334144592285}, {}},
    {"norm fro axes 0 2", "f32", {3}, {2.3717081546783447, 2.0463380813598633, 2.397915840148926}, {}},
    {"norm 1 axes 2 1", "f32", {2}, {2.75, 3.5}, {}},
    {"norm -1 axes 0 1 keepdims", "f32", {1, 1, 4}, {1.0, 1.0, 1.0, 1.0}, {}},
    {"norm inf axes 1 2", "f32", {2}, {2.75, 3.5}, {}},
    {"norm -inf axes 2 0 keepdims", "f32", {1, 3, 1}, {1.0, 1.0, 1.0}, {}},
    {"norm 1-D inf", "f32", {}, {1.25}, {}},
    {"norm 2-D 1", "f32", {}, {2.5}, {}},
    {"norm 2-D inf", "f32", {}, {2.75}, {}},
    {"norm axis 1 3", "f32", {2, 4}, {1.044834852218628, 1.5749013423919678, 1.044834852218628, 0.9894729256629944, 1.5749013423919678, 1.044834852218628, 0.9894729256629944, 1.437224268913269}, {}},
    {"matrix_norm fro", "f32", {2}, {2.669269561767578, 2.9047374725341797}, {}},
    {"matrix_norm 1 keepdims", "f32", {2, 1, 1}, {2.5, 2.5}, {}},
    {"matrix_norm -inf", "f32", {2}, {2.5, 2.0}, {}},
    {"matrix_norm c64 inf", "f32", {2}, {2.9274301528930664, 2.6648447513580322}, {}},
    {"cross 3 broadcast", "f32", {2, 3}, {1.4375, 0.5625, 0.0625, 1.0, 0.75, 0.3125}, {}},
    {"cross 2x2", "f32", {4}, {0.75, 1.4375, 0.75, 0.75}, {}},
    {"cross 2x3", "f32", {3}, {-1.5625, 0.3125, 0.75}, {}},
    {"cross 3x2", "f32", {2, 3}, {0.25, 0.25, 0.75, 0.125, 0.125, -0.375}, {}},
    {"cross axes", "f32", {3, 4}, {1.25, -0.125, -0.125, -0.125, 0.9375, -0.4375, 0.25, 2.3125, 1.25, -0.8125, 0.5625, 0.5625}, {}},
    {"cross f64 axis 0", "f64", {3, 2}, {-1.9375, -0.5625, -0.9375, 1.125, -0.5625, -0.5625}, {}},
    {"multi_dot 4", "f32", {3, 4}, {-1.39453125, -0.296875, -2.25, -1.5390625, 1.69140625, 3.046875, -3.375, 0.6015625, 1.59765625, 2.09375, -1.40625, 0.9375}, {}},
    {"multi_dot vector first", "f32", {2}, {-3.0625, 2.265625}, {}},
    {"multi_dot vectors both", "f32", {}, {-1.875}, {}},
    {"multi_dot 2", "f32", {2}, {-0.8125, -0.9375}, {}},
    {"multi_dot c128 3", "c128", {2, 5}, {-0.21875, 0.546875, 1.453125, -2.96875, 0.890625, 0.25, 0.390625, 0.671875, -2.15625, 0.390625}, {1.6875, -0.296875, -0.109375, -1.25, -0.484375, 0.59375, -0.515625, -1.265625, 1.53125, -0.609375}},
    {"diagonal 0", "f32", {2, 3}, {-0.5, 0.0, 0.5, 1.25, -1.0, -0.5}, {}},
    {"diagonal 1", "f32", {2, 3}, {1.25, -1.0, -0.5, 0.25, 0.75, 1.25}, {}},
    {"diagonal -1", "f32", {2, 2}, {1.0, -1.25, 0.0, 0.5}, {}},
    {"diagonal 5", "f32", {2, 0}, {}, {}},
    {"matrix_transpose", "f32", {2, 4, 3}, {-0.5, 1.0, -0.25, 1.25, 0.0, -1.25, 0.25, -1.0, 0.5, -0.75, 0.75, -0.5, 1.25, 0.0, -1.25, 0.25, -1.0, 0.5, -0.75, 0.75, -0.5, 1.0, -0.25, 1.25}, {}},
    {"vecdot c64 broadcast", "c64", {2}, {-1.125, -0.0625}, {-0.25, -1.5625}},
    {"vecdot axis 0", "f32", {2}, {-1.6875, 0.875}, {}},
    {"vecdot i32", "i32", {2}, {16.0, -27.0}, {}},
    {"outer", "f32", {3, 2}, {-0.125, 0.375, 0.3125, -0.9375, 0.0625, -0.1875}, {}},
    {"trace 1", "f32", {2}, {-0.25, 2.25}, {}},
    {"trace -1", "f32", {2}, {-0.25, 0.5}, {}},
    {"trace i32 as f64", "f64", {}, {-1.0}, {}},
    {"matrix_power 0", "f32", {3, 3}, {1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0}, {}},
    {"matrix_power 1", "f32", {3, 3}, {0.25, -0.75, 1.0, 0.0, -1.0, 0.75, -0.25, -1.25, 0.5}, {}},
    {"matrix_power 2", "f32", {3, 3}, {-0.1875, -0.6875, 0.1875, -0.1875, 0.0625, -0.375, -0.1875, 0.8125, -0.9375}, {}},
    {"matrix_power 3", "f32", {3, 3}, {-0.09375, 0.59375, -0.609375, 0.046875, 0.546875, -0.328125, 0.1875, 0.5, -0.046875}, {}},
    {"matrix_power 5", "f32", {3, 3}, {0.0205078125, -0.3935546875, 0.3310546875, -0.0498046875, -0.2646484375, 0.111328125, -0.1201171875, -0.1357421875, -0.1083984375}, {}},
    {"matrix_power 13", "f32", {3, 3}, {-0.009422287344932556, -0.02020840346813202, -0.001332700252532959, -0.007271289825439453, 0.011027753353118896, -0.020995572209358215, -0.00512029230594635, 0.04226391017436981, -0.04065844416618347}, {}},
    {"matrix_power batched 6", "f32", {2, 2, 2}, {1.0, 0.0, -3.2880859375, 0.177978515625, 0.349365234375, 0.296630859375, -0.11865234375, 0.40869140625}, {}},
    {"matrix_power i32 5", "i32", {2, 2}, {1241.0, 4503.0, -1501.0, -260.0}, {}},
    {"matrix_power f64 -3", "f64", {3, 3}, {0.04799786673313552, 0.04001755173114395, -0.028963242889242992, 0.009199514114485578, 0.02149730932160976, -0.009540689250932145, 0.026426097888934488, -0.004125224113868572, 0.029673298026755626}, {}},
    {"block_diag", "f32", {5, 7}, {1.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.5, 1.25, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.25, -0.75, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.75, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 4.0}, {}},
    {"block_diag none", "f32", {1, 0}, {}, {}},
    {"toeplitz c", "f32", {3, 3}, {-0.5, 1.25, 0.25, 1.25, -0.5, 1.25, 0.25, 1.25, -0.5}, {}},
    {"toeplitz c r", "f32", {3, 4}, {-0.5, -0.75, 1.0, 0.0, 1.25, -0.5, -0.75, 1.0, 0.25, 1.25, -0.5, -0.75}, {}},
    {"toeplitz batched", "f32", {2, 3, 4}, {1.0, 0.75, -0.25, -1.25, 0.0, 1.0, 0.75, -0.25, -1.0, 0.0, 1.0, 0.75, 0.75, 0.75, -0.25, -1.25, -0.25, 0.75, 0.75, -0.25, -1.25, -0.25, 0.75, 0.75}, {}},
    {"toeplitz c64", "c64", {3, 3}, {-0.25, -1.25, 0.5, -1.25, -0.25, -1.25, 0.5, -1.25, -0.25}, {0.5, 0.0, 0.5, 0.0, 0.5, 0.0, -0.5, 0.0, 0.5}},
    {"hankel c", "f32", {3, 3}, {-0.5, 1.25, 0.25, 1.25, 0.25, 0.0, 0.25, 0.0, 0.0}, {}},
    {"hankel c r", "f32", {3, 4}, {-0.5, 1.25, 0.25, -0.75, 1.25, 0.25, -0.75, 1.0, 0.25, -0.75, 1.0, 0.0}, {}},
    {"hankel batched", "f32", {2, 3, 2}, {1.0, 0.0, 0.0, -1.0, -1.0, 0.75, 0.75, -0.25, -0.25, -1.25, -1.25, -1.25}, {}},
    {"circulant", "f32", {4, 4}, {-0.5, -0.75, 0.25, 1.25, 1.25, -0.5, -0.75, 0.25, 0.25, 1.25, -0.5, -0.75, -0.75, 0.25, 1.25, -0.5}, {}},
    {"circulant batched i32", "i32", {2, 3, 3}, {1.0, 4.0, -3.0, -3.0, 1.0, 4.0, 4.0, -3.0, 1.0, 0.0, 3.0, -4.0, -4.0, 0.0, 3.0, 3.0, -4.0, 0.0}, {}},
    {"norm nuc", "f32", {3}, {3.2569591999053955, 2.7950849533081055, 3.281334638595581}, {}},
    {"matrix_norm 2", "f32", {2}, {1.9606852531433105, 2.126574993133545}, {}},
    {"matrix_norm -2 keepdims", "f32", {2, 1, 1}, {0.3523571491241455, 0.8591471314430237}, {}},
    {"matrix_norm c128 nuc", "f64", {2}, {2.873890497682579, 3.2531967365795036}, {}},
    {"pinv", "f32", {4, 3}, {0.5204991698265076, 0.9197860360145569, 0.5989305377006531, 0.24955444037914276, -0.10695171356201172, -0.5347592830657959, -0.5704100728034973, -0.8983957767486572, -0.4919786751270294, -1.454545497894287, -1.0909091234207153, -1.4545456171035767}, {}},
    {"pinv batched f64", "f64", {2, 3, 4}, {0.9898989898989902, -0.16161616161616157, -1.3131313131313136, -0.8484848484848485, 0.24242424242424215, -0.12121212121212138, -0.4848484848484849, 0.3636363636363635, 0.7676767676767676, 0.28282828282828276, -0.20202020202020207, 0.4848484848484844, 0.24242424242424215, -0.12121212121212113, -0.4848484848484846, 0.36363636363636365, 1.015151515151515, 0.2424242424242426, -0.5303030303030303, 0.2727272727272729, 0.7424242424242423, -0.12121212121212095, -0.984848484848485, -0.6363636363636364}, {}},
    {"pinv rtol", "f32", {3, 3}, {0.10000000149011612, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0}, {}},
    {"pinv c64 hermitian", "c64", {3, 3}, {0.12836013734340668, -0.016928665339946747, 0.0026044007390737534, -0.016928663477301598, 0.20146971940994263, 0.039996322244405746, 0.002604398876428604, 0.039996325969696045, 0.1276160627603531}, {0.0, 0.01655660942196846, -0.0018602912314236164, -0.01655660942196846, 7.450580596923828e-09, 0.01730075478553772, 0.001860292162746191, -0.017300760373473167, 0.0}},
    {"matrix_rank", "i32", {}, {2.0}, {}},
    {"matrix_rank batched", "i32", {3}, {3.0, 1.0, 0.0}, {}},
    {"matrix_rank tol", "i32", {}, {2.0}, {}},
    {"matrix_rank vector", "i32", {}, {1.0}, {}},
    {"cond", "f32", {}, {1.8543857336044312}, {}},
    {"cond batched f64 -2", "f64", {2}, {0.1323504301774014, 0.1430994099849423}, {}},
    {"cond fro", "f32", {}, {3.4559481143951416}, {}},
    {"cond 1", "f64", {}, {3.4255319148936167}, {}},
    {"cond inf singular", "f32", {}, {I}, {}},
    {"lstsq x", "f64", {3}, {-0.5000000000000001, -0.3000000000000002, 0.39999999999999963}, {}},
    {"lstsq resid", "f64", {1}, {1.5125000000000004}, {}},
    {"lstsq rank", "i32", {}, {3.0}, {}},
    {"lstsq s", "f64", {3}, {2.5957630559815, 1.338398808662754, 0.8849874497255308}, {}},
    {"lstsq deficient x", "f32", {2, 2}, {-0.04000001773238182, 0.06000000610947609, -0.08000002056360245, 0.11999999731779099}, {}},
    {"lstsq deficient resid", "f32", {2}, {1.8625000715255737, 1.6750000715255737}, {}},
    {"lstsq deficient rank", "i32", {}, {1.0}, {}},
    {"tensorinv", "f32", {6, 2, 3}, {0.17501088976860046, -0.03555804491043091, -0.0010122753446921706, 0.013347634114325047, -0.029579978436231613, -0.0021265374962240458, 0.02026638761162758, 0.14480164647102356, 0.015236220322549343, 0.02864757739007473, -0.018290501087903976, 0.010487272404134274, -0.03499693423509598, 0.0047199963591992855, 0.18315748870372772, -0.028536930680274963, -0.005333867389708757, 0.03603024780750275, -0.028424406424164772, 0.007430033292621374, 0.033726226538419724, 0.14480026066303253, 0.025942541658878326, -0.026082560420036316, -0.00046198739437386394, 0.01895971968770027, -0.03397246450185776, 0.006512971129268408, 0.2063433676958084, -0.029982617124915123, 0.011671913787722588, 0.023962870240211487, -0.0021532552782446146, 0.018827805295586586, -0.043607860803604126, 0.163039892911911}, {}},
    {"tensorinv ind 1", "f32", {2, 2, 4}, {0.25106629729270935, 0.031213652342557907, -0.04633579030632973, 0.016867002472281456, 0.06281504780054092, 0.20240405201911926, -0.002326483139768243, 0.08452889323234558, -0.019920511171221733, 0.019145017489790916, 0.19518223404884338, -0.008288095705211163, 0.041828230023384094, -0.05966460332274437, -0.010808452032506466, 0.30937379598617554}, {}},
    {"tensorsolve", "f32", {6}, {-0.12091797590255737, 0.1678076684474945, -0.024343565106391907, -0.2848503589630127, -0.018668269738554955, -0.02484235167503357}, {}},
    {"tensorsolve axes", "f32", {6}, {-0.1267906278371811, 0.15387022495269775, -0.08986030519008636, -0.18038877844810486, 0.10027205944061279, -0.14345847070217133}, {}},
    {"expm f32 small", "f32", {3, 3}, {0.945322573184967, 0.1289767622947693, 0.02403150498867035, -0.07681910693645477, 1.1002205610275269, -0.0009449177887290716, -0.0989607647061348, 0.07146456837654114, 0.9740785956382751}, {}},
    {"expm f32", "f32", {3, 3}, {0.062020786106586456, 1.5502958297729492, 0.12842446565628052, -0.8717950582504272, 1.9353498220443726, -0.09730430692434311, -0.8056108355522156, 0.3204038739204407, 0.6769668459892273}, {}},
    {"expm f32 scaled", "f32", {3, 3}, {4.118198394775391, -3.1620712280273438, 0.426653653383255, 1.5568283796310425, 0.2480640411376953, 0.5673577189445496, -0.004540434572845697, 1.6581982374191284, 1.7080622911453247}, {}},
    {"expm f64 small", "f64", {3, 3}, {1.0024906094287278, -0.007534275942710822, 0.010009273457306978, -9.367148479059782e-06, 0.9900032160739983, 0.007481195434662818, -0.0025093437256860393, -0.012459291909292302, 1.0049531174120188}, {}},
    {"expm f64 mid", "f64", {3, 3}, {1.0661844679440777, -0.2531932007253704, 0.30571771944616355, -0.008195969533970638, 0.7052102399324639, 0.20674937336620341, -0.08257640701201888, -0.3363863194097018, 1.1077810272862432}, {}},
    {"expm f64", "f64", {4, 4}, {2.365871818435921, -1.852455128003823, 2.8861993306031457, 0.859095981046846, -1.414807834588433, 2.187081063089552, -1.6137911177559736, -1.3484800735325857, 1.590126931578937, -1.644324314766415, 4.504841592723041, 0.9518887111975687, -1.1905527214454168, 1.39521187632696, -0.9951488556360784, -0.25568734338186294}, {}},
    {"expm f64 scaled", "f64", {4, 4}, {3500765575299791.5, -3650858522359410.5, 7292489790023548.0, 2236857503725204.5, -2170559042341996.2, 2263620287496669.5, -4521519454660085.0, -1386905571569300.0, 3991541007820785.0, -4162675618318616.5, 8314830404918130.0, 2550444542121671.0, -1679783609820999.8, 1751803191537461.2, -3499178839765502.5, -1073318533172831.4}, {}},
    {"expm c128", "c128", {3, 3}, {1.5223745791229595, 0.28850801597584097, -2.377623479159512, 0.6128497067888876, 1.2592423315232837, -3.277278386237518, 1.4151150654729183, -0.5943687315840653, 2.4896012398938776}, {-0.30267958071766027, -1.2048235779889367, 3.61158133852637, -0.6696660804949799, -0.3509587298362043, 0.30277299453740736, 0.9694231955245574, 0.05767777588276367, -1.3199759267363504}},
    {"expm batched f32", "f32", {2, 2, 2}, {0.9527038335800171, 0.11749085783958435, 0.0234981719404459, 0.929205596446991, 0.8788151144981384, -2.6688807010650635, 3.55850887298584, -0.010812507942318916}, {}},
    {"expm upper", "f64", {3, 3}, {0.36787944117144233, 0.6404209147643429, -0.23527094359182268, 0.0, 1.648721270700128, -0.4705418871836454, 0.0, 0.0, 0.47236655274101474}, {}},
    {"expm max_squarings", "f32", {3, 3}, {N, N, N, N, N, N, N, N, N}, {}},
    {"polar unitary", "f64", {4, 3}, {0.47542548843989385, -0.11197565731946102, 0.7712103412447845, -0.08567273873293041, -0.37494078295902517, 0.4305960107170129, -0.6467709659057548, -0.6379059085985892, 0.08998168018924119, -0.5901848053288266, 0.6632924793912237, 0.4601358303175475}, {}},
    {"polar posdef", "f64", {3, 3}, {0.5756415162508252, -0.20016367687582992, -0.059760749894888214, -0.2001636768758299, 2.085420510935888, -0.5463110789902185, -0.059760749894888235, -0.5463110789902184, 1.2541821469565526}, {}},
    {"polar left unitary", "f32", {2, 3}, {0.47298404574394226, -0.06766264140605927, 0.8784691691398621, -0.33782240748405457, -0.934772789478302, 0.10989049822092056}, {}},
    {"polar left posdef", "f32", {2, 2}, {1.0474621057510376, 0.7265145182609558, 0.7265145182609558, 1.0171908140182495}, {}},
    {"eigvals sorted", "c64", {4}, {-1.299727201461792, 0.12147781252861023, 0.12147781252861023, 2.0567708015441895}, {0.0, -0.4025585949420929, 0.4025585949420929, 0.0}},
    {"eigvals f64 sorted", "c128", {2, 3}, {-0.12499999999999978, -0.12499999999999978, 1.3257099462083274e-16, -2.1032198415774908e-16, 0.12500000000000036, 0.12500000000000036}, {-0.739509972887452, 0.739509972887452, 0.0, 0.0, -0.7395099728874526, 0.7395099728874526}},
    {"eigvals c64 sorted", "c64", {3}, {-0.5294699668884277, 1.143585443496704, 1.385884404182434}, {-0.2526342272758484, 0.5446620583534241, -1.0420278310775757}},
    {"tridiagonal_solve", "f32", {2, 4, 3}, {-0.1649484634399414, 0.19587628543376923, -0.010309278964996338, -0.4639175236225128, 0.11340206861495972, -0.2164948433637619, 0.45315006375312805, 0.059106528759002686, -0.2744559049606323, 0.4466208517551422, 0.014776632189750671, -0.4019473195075989, 0.39891892671585083, -0.1529729664325714, -0.5621621608734131, 0.19135135412216187, -0.22378377616405487, 0.5027027130126953, 0.17405405640602112, -0.27135133743286133, 0.5081080794334412, -0.07459458708763123, -0.45513513684272766, 0.2108108103275299}, {}},
    {"tridiagonal_solve f64", "f64", {2, 4, 3}, {-0.16494845360824742, 0.1958762886597938, -0.010309278350515462, -0.4639175257731959, 0.11340206185567009, -0.21649484536082475, 0.4531500572737686, 0.05910652920962199, -0.27445589919816726, 0.44662084765177545, 0.014776632302405498, -0.40194730813287516, 0.3989189189189189, -0.15297297297297296, -0.5621621621621622, 0.19135135135135134, -0.22378378378378377, 0.5027027027027027, 0.17405405405405405, -0.27135135135135136, 0.5081081081081081, -0.07459459459459458, -0.45513513513513515, 0.21081081081081082}, {}},
    {"tridiagonal_solve c64", "c64", {2, 4, 3}, {-0.14306329190731049, 0.2175905406475067, -0.004682290833443403, -0.5376248359680176, 0.05838419124484062, -0.19756048917770386, 0.4307401180267334, 0.11294322460889816, -0.28568005561828613, 0.43923312425613403, 0.020728779956698418, -0.41128009557724, 0.4495478868484497, -0.19131600856781006, -0.6258569955825806, 0.1721477210521698, -0.23629993200302124, 0.4862108826637268, 0.2029876708984375, -0.34992119669914246, 0.4642833173274994, -0.09146329760551453, -0.35024985671043396, 0.17722490429878235}, {0.010322154499590397, -0.0622139610350132, -0.1488882452249527, 0.18068717420101166, 0.006593026220798492, -0.26728373765945435, 0.02142254263162613, 0.09008429199457169, 0.0783211961388588, -0.20874935388565063, 0.1985996663570404, -0.004226370248943567, -0.1352991759777069, 0.26752960681915283, 0.07275637239217758, -0.15363691747188568, -0.2408311516046524, 0.347554087638855, -0.0995955690741539, -0.13084706664085388, 0.40547603368759155, 0.23047123849391937, -0.23679299652576447, -0.4443765878677368}},
    {"sqrtm", "c64", {3, 3}, {1.6100356578826904, 0.33978983759880066, 0.07590307295322418, -0.20642626285552979, 2.017216205596924, 0.00425565242767334, -0.2908371686935425, 0.23054161667823792, 1.6646597385406494}, {-1.0244548320770264e-07, 0.0, 2.2625184215030458e-07, -1.043081283569336e-07, 0.0, 5.9224433357485395e-08, -2.682209014892578e-07, -3.3527612686157227e-08, 3.588569086332427e-08}},
    {"sqrtm f64", "c128", {4, 4}, {2.044232867526254, -0.17025771094667336, 0.2294040890593948, -0.017490872984789962, -0.2488979292282467, 2.1866027599292823, -0.04222693391584581, -0.31778826099904844, 0.11140446329377951, -0.1105443536855546, 2.28453118388543, 0.053695556429894375, -0.18172633346072223, 0.24631611719040192, 0.0129001609101905, 1.7533981684156354}, {-2.220446049250313e-16, 1.1102230246251565e-16, 4.163336342344337e-16, 5.551115123125783e-17, -4.996003610813204e-16, -2.220446049250313e-16, 2.220446049250313e-16, 1.942890293094024e-16, -2.42861286636753e-16, 0.0, 1.8041124150158794e-16, 0.0, -1.942890293094024e-16, -2.7755575615628914e-16, 2.220446049250313e-16, 1.1102230246251565e-16}},
    {"sqrtm c128", "c128", {3, 3}, {2.0104381711814288, -0.006953432910724422, -0.2433618365589142, 0.20623513782245473, 1.644250960862128, -0.30696959744786956, 0.1258573995306982, -0.13885822485056795, 2.067877485372239}, {0.009481258785647123, -0.13080004033256923, 0.16672075489858795, 0.09075369347018813, -0.07728193425460061, -0.22216593482501912, 0.12943441004406717, -0.002928094672371831, -0.12603068895017144}},
    {"eigh_tridiagonal", "f32", {5}, {-1.4318104982376099, -0.5371023416519165, 0.44344061613082886, 1.0, 1.7754720449447632}, {}},
    {"eigh_tridiagonal f64 select", "f64", {3}, {-1.0742612157890072, -0.17368382888339723, 1.6001509964828504}, {}},
    {"lstsq wide c64 x", "c64", {4, 2}, {0.37914708256721497, 0.0009478554129600525, -0.2909952402114868, 0.6293840408325195, -0.1895734667778015, 0.09004740417003632, 0.25781992077827454, 0.009478703141212463}, {-0.11943128705024719, -0.28720390796661377, 0.06161145865917206, -0.10616116970777512, 0.33649295568466187, 0.08530806750059128, -0.30236971378326416, -0.08056874573230743}},
    {"lstsq wide c64 resid", "f32", {2}, {6.039613253960852e-14, 8.704148513061227e-14}, {}},
    {"pinv batched rtol", "f32", {2, 3, 3}, {0.25, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0}, {}},
    {"cond nuc c128", "f64", {}, {11.218193843772752}, {}},
    {"matrix_rank hermitian", "i32", {}, {1.0}, {}},
    {"norm c64 -2", "f32", {}, {0.265105664730072}, {}},
};

ts::DType dtype_of(const std::string& s) {
  static const std::map<std::string, ts::DType> m{{"f32", ts::f32},  {"f64", ts::f64}, {"c64", ts::c64},
                                                  {"c128", ts::c128}, {"i32", ts::i32}, {"i64", ts::i64}};
  return m.at(s);
}

/// The test inputs, as the Python script makes them: ((i * 7 + seed * 3) % 11 - 5) / 4 with
/// imaginary part ((i * 5 + seed) % 7 - 3) / 4; integers take the numerator only.
ts::Array arr(const ts::Shape& shape, int seed, ts::DType dt = ts::f32) {
  const int64_t n = ts::shape_size(shape);
  std::vector<ts::complex128_t> v;
  for (int64_t i = 0; i < n; ++i) {
    const double re = double((i * 7 + seed * 3) % 11 - 5);
    const double im = double((i * 5 + seed) % 7 - 3) / 4;
    v.emplace_back(ts::is_integer(dt) ? re : re / 4, ts::is_complex(dt) ? im : 0.0);
  }
  const ts::Array z(v, shape);
  return ts::is_complex(dt) ? z.astype(dt) : ts::real(z).astype(dt);
}

/// A well-conditioned matrix: arr + n * identity.
ts::Array spd(int64_t n, int seed, ts::DType dt = ts::f32) { return arr({n, n}, seed, dt) + ts::eye(n, std::nullopt, 0, dt) * double(n); }

std::vector<C> read(const ts::Array& a) {
  auto z = a.astype(ts::c128).to_vector<ts::complex128_t>();
  return std::vector<C>(z.begin(), z.end());
}

double tol_of(ts::DType dt) { return dt == ts::f64 || dt == ts::c128 ? 1e-12 : 2e-5; }

/// got == want elementwise within tol * (1 + |want|); NaNs and infinities must match.
void expect_close(const std::vector<C>& got, const std::vector<C>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const C g = got[i], w = want[i];
    if (std::isnan(w.real()) || std::isinf(w.real())) {
      EXPECT_TRUE(std::isnan(w.real()) ? std::isnan(g.real()) : g.real() == w.real()) << what << " at " << i;
      continue;
    }
    EXPECT_LE(std::abs(g - w), tol * (1 + std::abs(w))) << what << " at " << i << ": " << g << " vs " << w;
  }
}

void expect_close(const ts::Array& got, const ts::Array& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  expect_close(read(got), read(want), tol, what);
}

/// The computations the recorded values come from, by name.
std::map<std::string, std::function<ts::Array()>> cases() {
  std::map<std::string, std::function<ts::Array()>> m;
  auto x = [] { return arr({2, 3, 4}, 1); };
  const double inf = la::inf;
  m["vector_norm 2"] = [=] { return la::vector_norm(x()); };
  m["vector_norm 1 axis -1"] = [=] { return la::vector_norm(x(), 1, ts::Axes{-1}); };
  m["vector_norm inf axis 1"] = [=] { return la::vector_norm(x(), inf, ts::Axes{1}); };
  m["vector_norm -inf axes 0 2"] = [=] { return la::vector_norm(x(), -inf, ts::Axes{0, 2}); };
  m["vector_norm 0 axis 2 keepdims"] = [=] { return la::vector_norm(x(), 0, ts::Axes{2}, true); };
  m["vector_norm 3 axis 1"] = [=] { return la::vector_norm(x(), 3, ts::Axes{1}); };
  m["vector_norm 0.5 axis -1"] = [=] { return la::vector_norm(x(), 0.5, ts::Axes{-1}); };
  m["vector_norm -1 axis 0"] = [=] { return la::vector_norm(x(), -1, ts::Axes{0}); };
  m["vector_norm c64 2 axis -1"] = [] { return la::vector_norm(arr({3, 4}, 2, ts::c64), 2, ts::Axes{-1}); };
  m["vector_norm c128 3"] = [] { return la::vector_norm(arr({3, 4}, 2, ts::c128), 3); };
  m["vector_norm f64 2 axis 0"] = [] { return la::vector_norm(arr({3, 4}, 3, ts::f64), 2, ts::Axes{0}); };
  m["vector_norm i32 2"] = [] { return la::norm(arr({5}, 4, ts::i32)); };

  m["norm none 3-D"] = [=] { return la::norm(x()); };
  m["norm none 3-D keepdims"] = [=] { return la::norm(x(), std::nullopt, std::nullopt, true); };
  m["norm fro axes 0 2"] = [=] { return la::norm(x(), "fro", ts::Axes{0, 2}); };
  m["norm 1 axes 2 1"] = [=] { return la::norm(x(), 1, ts::Axes{2, 1}); };
  m["norm -1 axes 0 1 keepdims"] = [=] { return la::norm(x(), -1, ts::Axes{0, 1}, true); };
  m["norm inf axes 1 2"] = [=] { return la::norm(x(), inf, ts::Axes{1, 2}); };
  m["norm -inf axes 2 0 keepdims"] = [=] { return la::norm(x(), -inf, ts::Axes{2, 0}, true); };
  m["norm 1-D inf"] = [] { return la::norm(arr({5}, 5), la::inf); };
  m["norm 2-D 1"] = [] { return la::norm(arr({3, 4}, 6), 1); };
  m["norm 2-D inf"] = [] { return la::norm(arr({3, 4}, 6), la::inf); };
  m["norm axis 1 3"] = [=] { return la::norm(x(), 3, ts::Axes{1}); };
  m["matrix_norm fro"] = [=] { return la::matrix_norm(x()); };
  m["matrix_norm 1 keepdims"] = [=] { return la::matrix_norm(x(), 1, true); };
  m["matrix_norm -inf"] = [=] { return la::matrix_norm(x(), -inf); };
  m["matrix_norm c64 inf"] = [] { return la::matrix_norm(arr({2, 3, 3}, 7, ts::c64), la::inf); };

  m["cross 3 broadcast"] = [] { return la::cross(arr({2, 3}, 1), arr({3}, 2)); };
  m["cross 2x2"] = [] { return la::cross(arr({4, 2}, 3), arr({4, 2}, 4), la::CrossAxes{}); };
  m["cross 2x3"] = [] { return la::cross(arr({2}, 5), arr({3}, 6), la::CrossAxes{}); };
  m["cross 3x2"] = [] { return la::cross(arr({2, 3}, 5), arr({2}, 6), la::CrossAxes{}); };
  m["cross axes"] = [] { return la::cross(arr({3, 4}, 7), arr({4, 3}, 8), {.axisa = 0, .axisb = -1, .axisc = 0}); };
  m["cross f64 axis 0"] = [] { return la::cross(arr({3, 2}, 9, ts::f64), arr({3, 2}, 10, ts::f64), 0); };

  m["multi_dot 4"] = [] { return la::multi_dot({arr({3, 5}, 1), arr({5, 2}, 2), arr({2, 6}, 3), arr({6, 4}, 4)}); };
  m["multi_dot vector first"] = [] { return la::multi_dot({arr({3}, 1), arr({3, 4}, 2), arr({4, 2}, 3)}); };
  m["multi_dot vectors both"] = [] { return la::multi_dot({arr({3}, 1), arr({3, 4}, 2), arr({4}, 3)}); };
  m["multi_dot 2"] = [] { return la::multi_dot({arr({2, 3}, 1), arr({3}, 2)}); };
  m["multi_dot c128 3"] = [] {
    return la::multi_dot({arr({2, 3}, 1, ts::c128), arr({3, 3}, 2, ts::c128), arr({3, 5}, 3, ts::c128)});
  };

  m["diagonal 0"] = [=] { return la::diagonal(x()); };
  m["diagonal 1"] = [=] { return la::diagonal(x(), 1); };
  m["diagonal -1"] = [=] { return la::diagonal(x(), -1); };
  m["diagonal 5"] = [=] { return la::diagonal(x(), 5); };
  m["matrix_transpose"] = [=] { return la::matrix_transpose(x()); };
  m["vecdot c64 broadcast"] = [] { return la::vecdot(arr({2, 3}, 1, ts::c64), arr({3}, 2, ts::c64)); };
  m["vecdot axis 0"] = [] { return la::vecdot(arr({3, 2}, 3), arr({3, 1}, 4), 0); };
  m["vecdot i32"] = [] { return la::vecdot(arr({2, 4}, 5, ts::i32), arr({2, 4}, 6, ts::i32)); };
  m["outer"] = [] { return la::outer(arr({3}, 1), arr({2}, 2)); };
  m["trace 1"] = [=] { return la::trace(x(), 1); };
  m["trace -1"] = [=] { return la::trace(x(), -1); };
  m["trace i32 as f64"] = [] { return la::trace(arr({3, 3}, 2, ts::i32), 0, ts::f64); };

  for (int n : {0, 1, 2, 3, 5, 13})
    m["matrix_power " + std::to_string(n)] = [n] { return la::matrix_power(arr({3, 3}, 2), n); };
  m["matrix_power batched 6"] = [] { return la::matrix_power(arr({2, 2, 2}, 3), 6); };
  m["matrix_power i32 5"] = [] { return la::matrix_power(arr({2, 2}, 4, ts::i32), 5); };
  m["matrix_power f64 -3"] = [] { return la::matrix_power(spd(3, 5, ts::f64), -3); };

  m["block_diag"] = [] {
    return sla::block_diag({ts::Array(ts::Scalar(1.5f)), arr({2}, 1), arr({2, 3}, 2), arr({1, 1}, 0, ts::i32) * 0 + 4});
  };
  m["block_diag none"] = [] { return sla::block_diag({}); };
  m["toeplitz c"] = [] { return sla::toeplitz(arr({3}, 1)); };
  m["toeplitz c r"] = [] { return sla::toeplitz(arr({3}, 1), arr({4}, 2)); };
  m["toeplitz batched"] = [] { return sla::toeplitz(arr({2, 3}, 3), arr({4}, 4)); };
  m["toeplitz c64"] = [] { return sla::toeplitz(arr({3}, 5, ts::c64)); };
  m["hankel c"] = [] { return sla::hankel(arr({3}, 1)); };
  m["hankel c r"] = [] { return sla::hankel(arr({3}, 1), arr({4}, 2)); };
  m["hankel batched"] = [] { return sla::hankel(arr({2, 3}, 3), arr({2, 2}, 4)); };
  m["circulant"] = [] { return sla::circulant(arr({4}, 1)); };
  m["circulant batched i32"] = [] { return sla::circulant(arr({2, 3}, 2, ts::i32)); };

  // ---- through the factorizations ----
  m["norm nuc"] = [=] { return la::norm(x(), "nuc", ts::Axes{2, 0}); };
  m["matrix_norm 2"] = [=] { return la::matrix_norm(x(), 2); };
  m["matrix_norm -2 keepdims"] = [=] { return la::matrix_norm(x(), -2, true); };
  m["matrix_norm c128 nuc"] = [] { return la::matrix_norm(arr({2, 3, 2}, 4, ts::c128), "nuc"); };
  m["pinv"] = [] { return la::pinv(arr({3, 4}, 1)); };
  m["pinv batched f64"] = [] { return la::pinv(arr({2, 4, 3}, 2, ts::f64)); };
  const ts::Array diag3 = ts::Array({10.0f, 0.0f, 0.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.05f}).reshape({3, 3});
  m["pinv rtol"] = [=] { return la::pinv(diag3, 0.01); };
  m["pinv c64 hermitian"] = [] {
    const ts::Array h = spd(3, 3, ts::c64);
    return la::pinv(h + ts::conj(ts::transpose(h)), std::nullopt, true);
  };
  m["matrix_rank"] = [] { return la::matrix_rank(ts::Array({1.0f, 2.0f, 3.0f, 2.0f, 4.0f, 6.0f, 1.0f, 0.0f, 1.0f}).reshape({3, 3})); };
  m["matrix_rank batched"] = [] {
    return la::matrix_rank(ts::stack({ts::eye(3), ts::ones({3, 3}), ts::zeros({3, 3})}));
  };
  m["matrix_rank tol"] = [=] { return la::matrix_rank(diag3, 0.5); };
  m["matrix_rank vector"] = [] { return la::matrix_rank(ts::Array({0.0f, 2.0f})); };
  m["cond"] = [] { return la::cond(spd(3, 1)); };
  m["cond batched f64 -2"] = [] { return la::cond(arr({2, 3, 4}, 2, ts::f64), -2); };
  m["cond fro"] = [] { return la::cond(spd(3, 2), "fro"); };
  m["cond 1"] = [] { return la::cond(spd(3, 2, ts::f64), 1); };
  m["cond inf singular"] = [] { return la::cond(ts::Array({1.0f, 2.0f, 2.0f, 4.0f}).reshape({2, 2}), la::inf); };
  auto lst = [] { return la::lstsq(arr({5, 3}, 1, ts::f64), arr({5}, 2, ts::f64)); };
  m["lstsq x"] = [=] { return lst().solution; };
  m["lstsq resid"] = [=] { return lst().residuals; };
  m["lstsq rank"] = [=] { return lst().rank; };
  m["lstsq s"] = [=] { return lst().singular_values; };
  auto lst2 = [] {
    return la::lstsq(ts::Array({1.0f, 2.0f, 2.0f, 4.0f, 0.0f, 0.0f}).reshape({3, 2}), arr({3, 2}, 3), 1e-3);
  };
  m["lstsq deficient x"] = [=] { return lst2().solution; };
  m["lstsq deficient resid"] = [=] { return lst2().residuals; };
  m["lstsq deficient rank"] = [=] { return lst2().rank; };
  m["tensorinv"] = [] { return la::tensorinv(spd(6, 1).reshape({2, 3, 6}), 2); };
  m["tensorinv ind 1"] = [] { return la::tensorinv(spd(4, 2).reshape({4, 2, 2}), 1); };
  m["tensorsolve"] = [] { return la::tensorsolve(spd(6, 3).reshape({2, 3, 6}), arr({2, 3}, 4)); };
  m["tensorsolve axes"] = [] { return la::tensorsolve(spd(6, 3).reshape({6, 2, 3}), arr({2, 3}, 4), ts::Axes{0}); };
  m["expm f32 small"] = [] { return sla::expm(arr({3, 3}, 1) * 0.1); };
  m["expm f32"] = [] { return sla::expm(arr({3, 3}, 1)); };
  m["expm f32 scaled"] = [] { return sla::expm(arr({3, 3}, 1) * 8.0); };
  m["expm f64 small"] = [] { return sla::expm(arr({3, 3}, 2, ts::f64) * 0.01); };
  m["expm f64 mid"] = [] { return sla::expm(arr({3, 3}, 2, ts::f64) * 0.3); };
  m["expm f64"] = [] { return sla::expm(arr({4, 4}, 2, ts::f64)); };
  m["expm f64 scaled"] = [] { return sla::expm(arr({4, 4}, 2, ts::f64) * 20.0); };
  m["expm c128"] = [] { return sla::expm(arr({3, 3}, 3, ts::c128)); };
  m["expm batched f32"] = [] { return sla::expm(ts::stack({arr({2, 2}, 1) * 0.1, arr({2, 2}, 2) * 9.0})); };
  m["expm upper"] = [] { return sla::expm(ts::triu(arr({3, 3}, 4, ts::f64)), true); };
  m["expm max_squarings"] = [] { return sla::expm(arr({3, 3}, 1) * 1000.0, false, 3); };
  m["polar unitary"] = [] { return sla::polar(arr({4, 3}, 2, ts::f64), "right", "svd").unitary; };
  m["polar posdef"] = [] { return sla::polar(arr({4, 3}, 2, ts::f64), "right", "svd").posdef; };
  m["polar left unitary"] = [] { return sla::polar(arr({2, 3}, 2), "left").unitary; };
  m["polar left posdef"] = [] { return sla::polar(arr({2, 3}, 2), "left").posdef; };
  m["eigvals sorted"] = [] { return ts::sort_complex(la::eigvals(arr({4, 4}, 1))); };
  m["eigvals f64 sorted"] = [] { return ts::sort_complex(la::eigvals(arr({2, 3, 3}, 2, ts::f64))); };
  m["eigvals c64 sorted"] = [] { return ts::sort_complex(la::eigvals(arr({3, 3}, 3, ts::c64))); };

  // ---- structured problems ----
  auto tri = [](ts::DType dt) {
    return ts::lax::linalg::tridiagonal_solve(arr({2, 4}, 1, dt), arr({2, 4}, 2, dt) + 3.0, arr({2, 4}, 3, dt),
                                              arr({2, 4, 3}, 4, dt));
  };
  m["tridiagonal_solve"] = [=] { return tri(ts::f32); };
  m["tridiagonal_solve f64"] = [=] { return tri(ts::f64); };
  m["tridiagonal_solve c64"] = [=] { return tri(ts::c64); };
  m["sqrtm"] = [] { return sla::sqrtm(spd(3, 1)); };
  m["sqrtm f64"] = [] { return sla::sqrtm(spd(4, 2, ts::f64)); };
  m["sqrtm c128"] = [] { return sla::sqrtm(spd(3, 3, ts::c128)); };
  m["eigh_tridiagonal"] = [] { return sla::eigh_tridiagonal(arr({5}, 1), arr({4}, 2), true).eigenvalues; };
  m["eigh_tridiagonal f64 select"] = [] {
    return sla::eigh_tridiagonal(arr({5}, 3, ts::f64), arr({4}, 4, ts::f64), true, "i", {1, 3}).eigenvalues;
  };

  // ---- more dtypes and shapes ----
  auto lst3 = [] { return la::lstsq(arr({2, 4}, 5, ts::c64), arr({2, 2}, 6, ts::c64)); };
  m["lstsq wide c64 x"] = [=] { return lst3().solution; };
  m["lstsq wide c64 resid"] = [=] { return lst3().residuals; };
  m["pinv batched rtol"] = [] {
    const ts::Array d = ts::Array({4.0f, 1.0f, 0.1f, 2.0f, 0.5f, 0.3f}).reshape({2, 1, 3});
    return la::pinv(ts::eye(3) * d, ts::Array({0.05f, 0.2f}));
  };
  m["cond nuc c128"] = [] { return la::cond(spd(3, 4, ts::c128), "nuc"); };
  m["matrix_rank hermitian"] = [] { return la::matrix_rank(ts::Array({2.0f, 1.0f, 1.0f, 0.5f}).reshape({2, 2}), std::nullopt, true); };
  m["norm c64 -2"] = [] { return la::norm(arr({3, 3}, 8, ts::c64), -2); };
  return m;
}

TEST(LinalgComposedJax, MatchesRecordedValues) {
  const auto fns = cases();
  std::set<std::string> seen;
  for (const JaxValue& v : kJax) {
    SCOPED_TRACE(v.name);
    seen.insert(v.name);
    auto it = fns.find(v.name);
    ASSERT_NE(it, fns.end()) << "no computation for " << v.name;
    ts::Array got;
    try {
      got = it->second();
    } catch (const std::exception& e) {
      ADD_FAILURE() << v.name << " threw: " << e.what();
      continue;
    }
    const ts::DType dt = dtype_of(v.dtype);
    EXPECT_EQ(got.dtype(), dt);
    EXPECT_EQ(got.shape(), v.shape);
    std::vector<C> want;
    for (size_t i = 0; i < v.re.size(); ++i) want.emplace_back(v.re[i], v.im.empty() ? 0.0 : v.im[i]);
    expect_close(read(got), want, tol_of(dt), v.name);
  }
  for (const auto& [name, fn] : fns) EXPECT_TRUE(seen.count(name)) << name << " has no recorded value";
}

// ---- transformations ----

/// Float64 values without zeros or ties (the norms built on |x|, max and min are smooth
/// there): arr + 0.0137 i + 0.1.
ts::Array smooth(const ts::Shape& shape, int seed) {
  return arr(shape, seed, ts::f64) + ts::arange(0.0, double(ts::shape_size(shape)), 1.0, ts::f64).reshape(shape) * 0.0137 + 0.1;
}

/// f's derivatives at x against central differences, forward and reverse, eager and under
/// jit (check_grads of transforms/check_transforms.h).
void expect_grad_matches_differences(const std::function<ts::Array(const ts::Array&)>& f, const ts::Array& x,
                                     const std::string& what) {
  SCOPED_TRACE(what);
  transform_testing::check_grads([&](const std::vector<ts::Array>& v) { return f(v[0]); }, {x});
}

TEST(LinalgComposedTransforms, GradientsMatchFiniteDifferences) {
  const ts::Array m = smooth({3, 4}, 1), b = smooth({2, 3, 4}, 2), sq = smooth({3, 3}, 3);
  using F = std::function<ts::Array(const ts::Array&)>;
  const std::vector<std::pair<std::string, std::pair<F, ts::Array>>> fs{
      {"vector_norm 2", {[](const ts::Array& x) { return la::vector_norm(x); }, b}},
      {"vector_norm 3 axis", {[](const ts::Array& x) { return ts::sum(la::vector_norm(x, 3, ts::Axes{1})); }, b}},
      {"vector_norm 0.5", {[](const ts::Array& x) { return la::vector_norm(x, 0.5); }, m}},
      {"vector_norm inf", {[](const ts::Array& x) { return ts::sum(la::vector_norm(x, la::inf, ts::Axes{0})); }, m}},
      {"vector_norm -inf", {[](const ts::Array& x) { return la::vector_norm(x, -la::inf); }, m}},
      {"matrix_norm fro", {[](const ts::Array& x) { return ts::sum(la::matrix_norm(x)); }, b}},
      {"matrix_norm 1", {[](const ts::Array& x) { return ts::sum(la::matrix_norm(x, 1)); }, b}},
      {"norm -inf axes", {[](const ts::Array& x) { return ts::sum(la::norm(x, -la::inf, ts::Axes{2, 0})); }, b}},
      {"cross", {[](const ts::Array& x) {
                   return ts::sum(la::cross(x, ts::flip(x, ts::Axes{0})) * ts::arange(0.0, 3.0, 1.0, ts::f64));
                 }, sq}},
      {"multi_dot", {[](const ts::Array& x) {
                       return ts::sum(la::multi_dot({x, ts::transpose(x), x, smooth({4, 2}, 5)}));
                     }, m}},
      {"matrix_power 5", {[](const ts::Array& x) { return ts::sum(la::matrix_power(x * 0.3, 5)); }, sq}},
      {"trace and diagonal", {[](const ts::Array& x) {
                                return ts::sum(la::trace(x, 1) * 2.0) + ts::sum(la::diagonal(x, -1) * la::diagonal(x, -1));
                              }, b}},
      {"vecdot", {[](const ts::Array& x) { return ts::sum(la::vecdot(x, x * x, 0)); }, m}},
      {"toeplitz hankel circulant", {[](const ts::Array& x) {
                                       return ts::sum(sla::toeplitz(x, x * 2.0) * smooth({4, 4}, 7)) +
                                              ts::sum(ts::square(sla::hankel(x))) + ts::sum(ts::sin(sla::circulant(x)));
                                     }, smooth({4}, 6)}},
      {"block_diag", {[](const ts::Array& x) {
                        return ts::sum(ts::square(sla::block_diag({x, x * 3.0})) * smooth({6, 8}, 8));
                      }, m}},
  };
  for (const auto& [name, fx] : fs) expect_grad_matches_differences(fx.first, fx.second, name);
}

TEST(LinalgComposedTransforms, JitMatchesEager) {
  auto f = [](const ts::Array& x, const ts::Array& c) {
    return std::make_tuple(la::norm(x, 1, ts::Axes{2, 1}), la::vector_norm(x, 3, ts::Axes{-1}, true),
                           la::matrix_norm(x, -la::inf), la::diagonal(x, 1), la::trace(x, -1),
                           la::multi_dot({x[{0}], ts::transpose(x[{1}]), x[{0}]}), sla::toeplitz(c),
                           sla::hankel(c, c * 2.0), sla::circulant(c), la::cross(x[{0, ts::Slice(0, 3), ts::Slice(0, 3)}], c[{ts::Slice(0, 3)}]));
  };
  const ts::Array x = arr({2, 3, 4}, 1), c = arr({5}, 2);
  auto eager = f(x, c);
  auto jitted = ts::jit(f)(x, c);
  auto check = [&]<size_t... I>(std::index_sequence<I...>) {
    (expect_close(std::get<I>(jitted), std::get<I>(eager), 1e-6, "output " + std::to_string(I)), ...);
  };
  check(std::make_index_sequence<10>{});
}

TEST(LinalgComposedTransforms, VmapMatchesALoop) {
  const ts::Array ms = arr({4, 3, 3}, 1), cs = arr({4, 5}, 2), r = arr({3}, 3), vs = arr({4, 3}, 4);
  const ts::Array pw = ts::vmap([](const ts::Array& m) { return la::matrix_power(m, 5); })(ms);
  const ts::Array tp = ts::vmap([](const ts::Array& c, const ts::Array& r) { return sla::toeplitz(c, r); },
                                {0, ts::none})(cs, r);
  const ts::Array nm = ts::vmap([](const ts::Array& m) { return la::norm(m, la::inf); })(ms);
  const ts::Array md = ts::vmap([](const ts::Array& m, const ts::Array& v) { return la::multi_dot({v, m, m, v}); })(ms, vs);
  const ts::Array cr = ts::vmap([](const ts::Array& m, const ts::Array& v) { return la::cross(m, v); }, {0, ts::none})(ms, r);
  for (int64_t i = 0; i < 4; ++i) {
    const ts::Array m = ms[{i}], v = vs[{i}];
    expect_close(pw[{i}], la::matrix_power(m, 5), 1e-6, "matrix_power");
    expect_close(tp[{i}], sla::toeplitz(cs[{i}], r), 0, "toeplitz");
    expect_close(nm[{i}], la::norm(m, la::inf), 1e-6, "norm");
    expect_close(md[{i}], la::multi_dot({v, m, m, v}), 1e-6, "multi_dot");
    expect_close(cr[{i}], la::cross(m, r), 1e-6, "cross");
  }
  // Batched inputs of the functions themselves give the same as vmap.
  expect_close(la::matrix_power(ms, 5), pw, 1e-6, "batched matrix_power");
  expect_close(sla::toeplitz(cs, r), tp, 0, "batched toeplitz");
}

// ---- errors ----

using tessel_test::expect_error;

TEST(LinalgComposedErrors, NameTheFunctionAndTheShape) {
  const ts::Array v = arr({3}, 1), m = arr({2, 3}, 2);
  expect_error<ts::ShapeError>([&] { la::matrix_power(m, 2); }, {"linalg.matrix_power", "square", "(2, 3)"});
  expect_error<ts::ShapeError>([&] { la::matrix_power(v, 2); }, {"linalg.matrix_power", "(3,)"});
  expect_error<ts::ShapeError>([&] { la::matrix_norm(v); }, {"linalg.matrix_norm", "(3,)"});
  expect_error<ts::ShapeError>([&] { la::diagonal(v); }, {"linalg.diagonal", "(3,)"});
  expect_error<ts::ShapeError>([&] { la::trace(v); }, {"linalg.trace", "(3,)"});
  expect_error<ts::ShapeError>([&] { la::matrix_transpose(v); }, {"linalg.matrix_transpose", "(3,)"});
  expect_error<ts::ValueError>([&] { la::norm(arr({2, 2, 2}, 1), 2); }, {"linalg.norm", "3 axes", "(2, 2, 2)"});
  expect_error<ts::ValueError>([&] { la::norm(m, 2, ts::Axes{1, -1}); }, {"linalg.norm", "differ"});
  expect_error<ts::ValueError>([&] { la::norm(m, 3); }, {"linalg.norm", "invalid order 3", "matrix norm"});
  expect_error<ts::ValueError>([&] { la::vector_norm(v, "fro"); }, {"linalg.vector_norm", "'fro'", "vector norm"});
  expect_error<ts::ValueError>([&] { la::norm(v, "nuc"); }, {"linalg.norm", "'nuc'"});
  expect_error<ts::ValueError>([&] { la::vector_norm(ts::zeros({0}), -la::inf); }, {"linalg.vector_norm", "-inf", "(0,)"});
  expect_error<ts::IndexError>([&] { la::vector_norm(m, 2, ts::Axes{2}); }, {"linalg.vector_norm"});
  expect_error<ts::ValueError>([&] { la::multi_dot({m}); }, {"linalg.multi_dot", "at least two"});
  expect_error<ts::ShapeError>([&] { la::multi_dot({m, m}); }, {"linalg.multi_dot", "(2, 3), (2, 3)"});
  expect_error<ts::ShapeError>([&] { la::multi_dot({m, arr({3, 2, 1}, 1), v}); }, {"linalg.multi_dot", "2-D"});
  expect_error<ts::ValueError>([&] { la::cross(arr({4}, 1), v, la::CrossAxes{}); }, {"cross", "2 or 3", "(4,)"});
  expect_error<ts::ValueError>([&] { la::cross(arr({2}, 1), arr({2}, 1)); }, {"linalg.cross", "3-vectors", "(2,)"});
  expect_error<ts::ShapeError>([&] { la::vecdot(m, v, 0); }, {"linalg.vecdot", "(2, 3)", "(3,)"});
  expect_error<ts::ShapeError>([&] { la::outer(m, v); }, {"linalg.outer", "1-D", "(2, 3)"});
  expect_error<ts::ShapeError>([&] { sla::block_diag({v, arr({1, 2, 2}, 1)}); }, {"block_diag", "(1, 2, 2)", "argument 1"});
  expect_error<ts::ShapeError>([&] { sla::hankel(ts::Array(1.0)); }, {"scipy.linalg.hankel", "1-D"});
  expect_error<ts::ShapeError>([&] { sla::toeplitz(arr({2, 3}, 1), arr({3, 3}, 1)); }, {"scipy.linalg.toeplitz"});
  // Under jit the same errors come while tracing.
  expect_error<ts::ShapeError>([&] { ts::jit([](const ts::Array& a) { return la::matrix_power(a, 3); })(m); },
                               {"linalg.matrix_power", "(2, 3)"});
}

TEST(LinalgComposedEdges, EmptyAndDegenerateInputs) {
  // Empty reductions follow JAX: inf-norms of nothing are 0, the 2-norm is 0.
  EXPECT_EQ(la::vector_norm(ts::zeros({0}), la::inf).item<float>(), 0.0f);
  EXPECT_EQ(la::matrix_norm(ts::zeros({2, 0}), 1).item<float>(), 0.0f);
  EXPECT_EQ(la::norm(ts::zeros({0, 3})).item<float>(), 0.0f);
  EXPECT_EQ(sla::toeplitz(ts::zeros({0})).shape(), (ts::Shape{0, 0}));
  EXPECT_EQ(sla::hankel(ts::zeros({2}), ts::zeros({0})).shape(), (ts::Shape{2, 0}));
  EXPECT_EQ(sla::circulant(ts::zeros({3, 0})).shape(), (ts::Shape{3, 0, 0}));
  EXPECT_EQ(la::diagonal(ts::zeros({2, 3}), -5).shape(), (ts::Shape{0}));
  EXPECT_EQ(la::matrix_power(ts::zeros({2, 0, 0}), 3).shape(), (ts::Shape{2, 0, 0}));
  // A scalar passes through toeplitz and circulant as a 1-vector.
  expect_close(sla::circulant(ts::Array(2.0f)), ts::full({1, 1}, 2.0f), 0, "circulant of a scalar");
  // Half types stay half in the norms; integers become float32.
  EXPECT_EQ(la::vector_norm(ts::ones({4}, ts::f16)).dtype(), ts::f16);
  EXPECT_EQ(la::vector_norm(ts::ones({4}, ts::f16)).item<float>(), 2.0f);
  EXPECT_EQ(la::matrix_norm(ts::ones({2, 2}, ts::i32), 1).dtype(), ts::f32);
  // The int order 0 is the number 0, not a null name.
  EXPECT_EQ(la::vector_norm(ts::Array({1.0f, 0.0f, 3.0f}), 0).item<float>(), 2.0f);
}

}  // namespace

namespace {

// ---- the functions built on factorizations: transformations ----

TEST(LinalgComposedFactorTransforms, GradientsMatchFiniteDifferences) {
  const ts::Array m = smooth({3, 4}, 1), sq = smooth({3, 3}, 3) + ts::eye(3, std::nullopt, 0, ts::f64) * 2.0;
  using F = std::function<ts::Array(const ts::Array&)>;
  const std::vector<std::pair<std::string, std::pair<F, ts::Array>>> fs{
      {"pinv tall", {[](const ts::Array& x) { return ts::sum(ts::sin(la::pinv(ts::transpose(x)))); }, m}},
      {"pinv wide", {[](const ts::Array& x) { return ts::sum(ts::sin(la::pinv(x))); }, m}},
      {"pinv hermitian", {[](const ts::Array& x) { return ts::sum(ts::sin(la::pinv(x, std::nullopt, true))); }, sq}},
      {"expm", {[](const ts::Array& x) { return ts::sum(ts::sin(sla::expm(x))); }, sq * 0.5}},
      {"expm scaled", {[](const ts::Array& x) { return ts::sum(sla::expm(x) * smooth({3, 3}, 9)); }, sq * 3.0}},
      {"eigvals", {[](const ts::Array& x) { return ts::sum(ts::square(ts::real(la::eigvals(x)))); }, sq}},
      {"cond", {[](const ts::Array& x) { return la::cond(x); }, m}},
      {"cond 1", {[](const ts::Array& x) { return la::cond(x, 1); }, sq}},
      {"norm nuc", {[](const ts::Array& x) { return la::norm(x, "nuc"); }, m}},
      {"matrix_norm 2", {[](const ts::Array& x) { return la::matrix_norm(x, 2); }, m}},
      {"matrix_power -2", {[](const ts::Array& x) { return ts::sum(la::matrix_power(x, -2)); }, sq}},
      {"lstsq", {[](const ts::Array& x) { return ts::sum(ts::sin(la::lstsq(ts::transpose(x), smooth({4}, 4)).solution)); }, m}},
      {"tensorsolve", {[](const ts::Array& x) {
                         return ts::sum(ts::sin(la::tensorsolve(ts::reshape(x, {3, 3, 1}), smooth({3}, 2))));
                       }, sq}},
      {"tensorinv", {[](const ts::Array& x) { return ts::sum(ts::sin(la::tensorinv(ts::reshape(x, {3, 3, 1}), 1))); }, sq}},
      {"polar", {[](const ts::Array& x) {
                   const auto p = sla::polar(x);
                   return ts::sum(ts::sin(p.unitary)) + ts::sum(ts::cos(p.posdef));
                 }, ts::transpose(m)}},
  };
  for (const auto& [name, fx] : fs) expect_grad_matches_differences(fx.first, fx.second, name);
}

TEST(LinalgComposedFactorTransforms, JitAndVmapMatchEager) {
  const ts::Array ms = arr({3, 3, 3}, 1) * 0.7 + ts::eye(3) * 2.0, rect = arr({3, 4, 3}, 2);
  auto f = [](const ts::Array& a) {
    return std::make_tuple(sla::expm(a), la::eigvals(a), la::pinv(a), la::cond(a, 1), la::matrix_rank(a),
                           la::lstsq(a, a).solution, la::norm(a, "nuc", ts::Axes{1, 2}));
  };
  const auto eager = f(ms);
  const auto jitted = ts::jit(f)(ms);
  auto check = [&]<size_t... I>(std::index_sequence<I...>) {
    (expect_close(std::get<I>(jitted), std::get<I>(eager), 1e-5, "jit output " + std::to_string(I)), ...);
  };
  check(std::make_index_sequence<7>{});
  const ts::Array e = ts::vmap([](const ts::Array& a) { return sla::expm(a * 4.0); })(ms);
  const ts::Array w = ts::vmap([](const ts::Array& a) { return la::eigvals(a); })(ms);
  const ts::Array p = ts::vmap([](const ts::Array& a) { return la::pinv(a); })(rect);
  const ts::Array r = ts::vmap([](const ts::Array& a) { return la::matrix_rank(a); })(rect);
  for (int64_t i = 0; i < 3; ++i) {
    expect_close(e[{i}], sla::expm(ms[{i}] * 4.0), 1e-5, "vmap expm");
    expect_close(w[{i}], la::eigvals(ms[{i}]), 1e-5, "vmap eigvals");
    expect_close(p[{i}], la::pinv(rect[{i}]), 1e-5, "vmap pinv");
    expect_close(r[{i}], la::matrix_rank(rect[{i}]), 0, "vmap matrix_rank");
  }
}

TEST(LinalgComposedEig, EigenvectorsSatisfyTheirEquations) {
  for (ts::DType dt : {ts::f32, ts::f64, ts::c64, ts::c128}) {
    SCOPED_TRACE(ts::dtype_name(dt));
    const ts::Array a = arr({2, 4, 4}, 3, dt);
    const auto [w, v] = la::eig(a);
    const ts::DType c = dt == ts::f32 || dt == ts::c64 ? ts::c64 : ts::c128;
    ASSERT_EQ(w.dtype(), c);
    ASSERT_EQ(v.dtype(), c);
    ASSERT_EQ(w.shape(), (ts::Shape{2, 4}));
    const double tol = 100 * tol_of(dt);
    // a v = v diag(w), and each eigenvector has unit length.
    expect_close(read(ts::matmul(a.astype(c), v)), read(v * ts::expand_dims(w, {1})), tol, "a v = v w");
    expect_close(read(la::vector_norm(v, 2, ts::Axes{1})), read(ts::ones({2, 4}, ts::f64)), tol, "unit columns");
    expect_close(la::eigvals(a), w, tol, "eigvals = eig's eigenvalues");
    // lax's eig gives the left eigenvectors too: u^H a = w u^H.
    const auto r = ts::lax::linalg::eig(a);
    const ts::Array uh = linalg_testing::adjoint(r.left_eigenvectors);
    expect_close(read(ts::matmul(uh, a.astype(c))), read(uh * ts::expand_dims(r.eigenvalues, {2})), tol, "u^H a = w u^H");
  }
}

TEST(LinalgComposedEig, EigenvectorDerivativesOnOptIn) {
  // Well-separated real eigenvalues; the rule follows LAPACK's normalisation, so finite
  // differences of the normalised vectors agree with it.
  const ts::Array a = smooth({4, 4}, 2) * 0.1 + ts::eye(4, std::nullopt, 0, ts::f64) * ts::Array({1.0, 2.0, 3.0, 4.0});
  const ts::Array w1 = smooth({4, 4}, 3), w2 = smooth({4, 4}, 4);
  auto weigh = [&](const ts::Array& v) { return ts::sum(ts::real(v) * w1) + ts::sum(ts::imag(v) * w2); };
  expect_grad_matches_differences([&](const ts::Array& x) {
    const auto r = ts::lax::linalg::eig(x, false, true, true);
    return weigh(r.right_eigenvectors) + ts::sum(ts::square(ts::real(r.eigenvalues)));
  }, a, "right eigenvectors");
  expect_grad_matches_differences([&](const ts::Array& x) {
    return weigh(ts::lax::linalg::eig(x, true, false, true).left_eigenvectors);
  }, a, "left eigenvectors");
  expect_grad_matches_differences([&](const ts::Array& x) {
    return ts::sum(ts::imag(ts::lax::linalg::eig(x, false, false).eigenvalues) * ts::Array({1.0, 2.0, 3.0, 4.0}));
  }, a, "eigenvalues alone");
  // Complex eigenvalues: a rotation block (eigenvalues 2 +- i) beside two real ones.
  const ts::Array rot = ts::Array({2.0, -1.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0, 0.0, 6.0}).reshape({4, 4});
  expect_grad_matches_differences([&](const ts::Array& x) {
    const auto r = ts::lax::linalg::eig(x, false, true, true);
    return weigh(r.right_eigenvectors) + ts::sum(ts::imag(r.eigenvalues) * ts::Array({1.0, 2.0, 3.0, 4.0}));
  }, rot + smooth({4, 4}, 5) * 0.1, "complex pair");
}

TEST(LinalgComposedEig, IntegerAndHalfInputsBecomeComplex64) {
  // As jnp.linalg: integers and half types are factored in float32, so the results are
  // complex64; a diagonal matrix has its diagonal as eigenvalues.
  const ts::Array d = ts::Array({3, 1, 2}).astype(ts::i32);
  const ts::Array m = ts::eye(3, std::nullopt, 0, ts::i32) * d;
  const ts::Array w = la::eigvals(m);
  ASSERT_EQ(w.dtype(), ts::c64);
  expect_close(ts::sort_complex(w), ts::Array({1.0f, 2.0f, 3.0f}).astype(ts::c64), 1e-6, "integer eigenvalues");
  EXPECT_EQ(la::eig(m.astype(ts::f16)).eigenvectors.dtype(), ts::c64);
}

TEST(LinalgComposedFactorErrors, NameTheFunctionAndTheShape) {
  const ts::Array v = arr({3}, 1), m = arr({2, 3}, 2);
  expect_error<ts::ShapeError>([&] { la::eig(m); }, {"linalg.eig", "(2, 3)"});
  expect_error<ts::ShapeError>([&] { la::eigvals(v); }, {"linalg.eigvals", "(3,)"});
  expect_error<ts::ShapeError>([&] { sla::expm(m); }, {"scipy.linalg.expm", "(2, 3)"});
  expect_error<ts::ShapeError>([&] { la::pinv(v); }, {"linalg.pinv", "(3,)"});
  expect_error<ts::ShapeError>([&] { la::pinv(m, arr({2, 2}, 1)); }, {"linalg.pinv", "tolerance", "(2, 2)"});
  expect_error<ts::ShapeError>([&] { la::matrix_rank(m, arr({2}, 1)); }, {"linalg.matrix_rank", "tolerance", "(2,)"});
  expect_error<ts::ShapeError>([&] { la::lstsq(m, arr({3}, 1)); }, {"linalg.lstsq", "(2, 3)", "(3,)"});
  expect_error<ts::ShapeError>([&] { la::lstsq(m, arr({2, 2, 2}, 1)); }, {"linalg.lstsq", "(2, 2, 2)"});
  expect_error<ts::ShapeError>([&] { la::tensorinv(arr({2, 3, 4}, 1), 1); }, {"linalg.tensorinv", "(2, 3, 4)"});
  expect_error<ts::ValueError>([&] { la::tensorinv(m, 0); }, {"linalg.tensorinv", "ind"});
  expect_error<ts::ShapeError>([&] { la::tensorsolve(arr({2, 3, 4}, 1), m); }, {"linalg.tensorsolve", "(2, 3, 4)"});
  expect_error<ts::ShapeError>([&] { la::tensorsolve(arr({3, 2, 2}, 1), m); }, {"linalg.tensorsolve", "(2, 3)"});
  expect_error<ts::ValueError>([&] { la::cond(ts::zeros({2, 0, 0})); }, {"linalg.cond", "empty", "(2, 0, 0)"});
  expect_error<ts::ShapeError>([&] { la::cond(m, 1); }, {"linalg.cond", "square", "(2, 3)"});
  expect_error<ts::ValueError>([&] { sla::polar(m, "up"); }, {"scipy.linalg.polar", "side"});
  expect_error<ts::DTypeError>([&] { sla::expm(ts::eye(2, std::nullopt, 0, ts::f16)); }, {"scipy.linalg.expm", "float16"});
  // Eigenvectors of a non-symmetric matrix have no derivative (JAX neither, by default).
  expect_error<ts::ValueError>([&] { ts::grad([](const ts::Array& a) { return ts::sum(ts::real(la::eig(a).eigenvectors)); })(arr({3, 3}, 1, ts::f64)); },
                               {"eig", "eigenvectors", "eigvals"});
}

}  // namespace

namespace {

// ---- structured problems ----

TEST(LinalgComposedStructured, TridiagonalSolveRules) {
  namespace lx = ts::lax::linalg;
  const ts::Array dl = smooth({4}, 1), d = smooth({4}, 2) + 3.0, du = smooth({4}, 3), b = smooth({4, 2}, 4);
  // Gradients in each of the four operands, against finite differences.
  const ts::Array w = smooth({4, 2}, 5);
  expect_grad_matches_differences([&](const ts::Array& x) { return ts::sum(lx::tridiagonal_solve(x, d, du, b) * w); }, dl, "dl");
  expect_grad_matches_differences([&](const ts::Array& x) { return ts::sum(lx::tridiagonal_solve(dl, x, du, b) * w); }, d, "d");
  expect_grad_matches_differences([&](const ts::Array& x) { return ts::sum(lx::tridiagonal_solve(dl, d, x, b) * w); }, du, "du");
  expect_grad_matches_differences([&](const ts::Array& x) { return ts::sum(ts::sin(lx::tridiagonal_solve(dl, d, du, x))); }, b, "b");
  // The solution solves the dense system (row i of the sub-diagonal band holds dl[i]).
  const ts::Array a = ts::eye(4, std::nullopt, 0, ts::f64) * d +
                      ts::eye(4, std::nullopt, -1, ts::f64) * ts::reshape(dl, {4, 1}) +
                      ts::eye(4, std::nullopt, 1, ts::f64) * ts::reshape(du, {4, 1});
  expect_close(lx::tridiagonal_solve(dl, d, du, b), la::solve(a, b), 1e-12, "tridiagonal vs dense solve");
  // vmap with an unbatched operand, and jit.
  const ts::Array bs = smooth({3, 4, 2}, 6);
  const ts::Array v = ts::vmap([&](const ts::Array& x) { return lx::tridiagonal_solve(dl, d, du, x); })(bs);
  for (int64_t i = 0; i < 3; ++i) expect_close(v[{i}], lx::tridiagonal_solve(dl, d, du, bs[{i}]), 1e-12, "vmap");
  expect_close(ts::jit([](const ts::Array& x, const ts::Array& y, const ts::Array& z, const ts::Array& r) {
                 return lx::tridiagonal_solve(x, y, z, r);
               })(dl, d, du, b),
               lx::tridiagonal_solve(dl, d, du, b), 1e-12, "jit");
}

TEST(LinalgComposedStructured, SchurReconstructs) {
  for (ts::DType dt : {ts::f32, ts::f64, ts::c64, ts::c128})
    for (const char* output : {"real", "complex"}) {
      SCOPED_TRACE(std::string(ts::dtype_name(dt)) + " " + output);
      const ts::Array a = arr({2, 4, 4}, 3, dt);
      const auto [t, z] = sla::schur(a, output);
      const bool cplx = ts::is_complex(dt) || std::string(output) == "complex";
      ASSERT_EQ(ts::is_complex(t.dtype()), cplx);
      const double tol = 100 * tol_of(dt);
      expect_close(read(ts::matmul(ts::matmul(z, t), linalg_testing::adjoint(z))), read(a), tol, "z t z^H = a");
      expect_close(read(ts::matmul(linalg_testing::adjoint(z), z)), read(ts::broadcast_to(ts::eye(4), {2, 4, 4})),
                   tol, "z unitary");
      // Below the first sub-diagonal T is zero (below the diagonal too, for complex T).
      const auto tv = read(t);
      for (int64_t k = 0; k < 2; ++k)
        for (int64_t i = 0; i < 4; ++i)
          for (int64_t j = 0; j < i - (cplx ? 0 : 1); ++j) EXPECT_EQ(tv[size_t((k * 4 + i) * 4 + j)], C(0)) << i << "," << j;
    }
  // sqrtm's root squares back.
  const ts::Array a = spd(4, 6, ts::f64);
  const ts::Array x = sla::sqrtm(a);
  expect_close(read(ts::matmul(x, x)), read(a), 1e-12, "sqrtm^2");
  const ts::Array xs = sla::sqrtm(ts::stack({a, a * 4.0}));
  expect_close(xs[{1}], x * 2.0, 1e-12, "batched sqrtm");
}

TEST(LinalgComposedStructured, EighTridiagonalVectors) {
  const ts::Array d = arr({2, 5}, 1, ts::f64), e = arr({2, 4}, 2, ts::f64);
  const auto r = sla::eigh_tridiagonal(d, e);
  ASSERT_EQ(r.eigenvectors.shape(), (ts::Shape{2, 5, 5}));
  const ts::Array a = ts::broadcast_to(ts::eye(5, std::nullopt, 0, ts::f64), {2, 5, 5}) * ts::expand_dims(d, {1}) +
                      ts::pad(ts::eye(4, std::nullopt, 0, ts::f64) * ts::expand_dims(e, {1}), {{0, 0}, {1, 0}, {0, 1}}) +
                      ts::pad(ts::eye(4, std::nullopt, 0, ts::f64) * ts::expand_dims(e, {1}), {{0, 0}, {0, 1}, {1, 0}});
  expect_close(read(ts::matmul(a, r.eigenvectors)), read(r.eigenvectors * ts::expand_dims(r.eigenvalues, {1})), 1e-12,
               "a v = v w");
  const auto some = sla::eigh_tridiagonal(d, e, false, "i", {1, 2});
  expect_close(some.eigenvalues, r.eigenvalues[{ts::Slice(), ts::Slice(1, 3)}], 1e-12, "selected eigenvalues");
  EXPECT_EQ(some.eigenvectors.shape(), (ts::Shape{2, 5, 2}));
}

TEST(LinalgComposedStructured, Errors) {
  const ts::Array v = arr({4}, 1);
  expect_error<ts::ShapeError>([&] { sla::schur(arr({2, 3}, 1)); }, {"scipy.linalg.schur", "(2, 3)"});
  expect_error<ts::ValueError>([&] { sla::schur(arr({3, 3}, 1), "imaginary"); }, {"scipy.linalg.schur", "output"});
  expect_error<ts::ShapeError>([&] { sla::sqrtm(v); }, {"scipy.linalg.sqrtm", "(4,)"});
  expect_error<ts::ShapeError>([&] { sla::eigh_tridiagonal(v, v); }, {"eigh_tridiagonal", "(4,)"});
  expect_error<ts::ValueError>([&] { sla::eigh_tridiagonal(v, arr({3}, 1), true, "v"); }, {"eigh_tridiagonal", "\"v\""});
  expect_error<ts::ValueError>([&] { sla::eigh_tridiagonal(v, arr({3}, 1), true, "i", {2, 7}); },
                               {"eigh_tridiagonal", "select_range"});
  // schur has no derivative (JAX neither): the error names the primitive.
  expect_error<ts::Error>([&] { ts::grad([](const ts::Array& a) { return ts::sum(sla::schur(a).t); })(arr({3, 3}, 1, ts::f64)); },
                          {"schur"});
}

}  // namespace

namespace {

// ---- custom_linear_solve and custom_root ----

/// Richardson iteration x += 0.25 (b - A x), 200 steps in a while loop (bounds known only at
/// run time): a solver reverse mode cannot differentiate through.
ts::Array richardson(const std::function<ts::Array(const ts::Array&)>& matvec, const ts::Array& b) {
  return ts::fori_loop(ts::Array(0), ts::Array(200), [&](const ts::Array&, const ts::Array& x) {
    return x + (b - matvec(x)) * 0.25;
  }, ts::zeros_like(b));
}

TEST(LinalgComposedCustomSolve, LinearSolveDifferentiatesImplicitly) {
  namespace lx = ts::lax::linalg;
  // A well-conditioned symmetric positive definite A (eigenvalues in about [2.3, 4]).
  const ts::Array a0 = smooth({3, 3}, 1) * 0.2;
  const ts::Array a = (a0 + ts::transpose(a0)) * 0.5 + ts::eye(3, std::nullopt, 0, ts::f64) * 3.0, b = smooth({3}, 2);
  auto mv = [](const std::vector<ts::Array>& p, const ts::Array& x) { return ts::matmul(p[0], x); };
  auto solved = [&](const ts::Array& m, const ts::Array& rhs, bool symmetric) {
    return lx::custom_linear_solve(mv, {m}, rhs, richardson, symmetric ? nullptr : lx::LinearSolver(richardson),
                                   symmetric);
  };
  expect_close(solved(a, b, false), la::solve(a, b), 1e-10, "value");
  // Gradients in A and b equal those of the direct solve.
  for (bool symmetric : {false, true}) {
    auto loss = [&](const ts::Array& m, const ts::Array& rhs) { return ts::sum(ts::sin(solved(m, rhs, symmetric))); };
    auto direct = [](const ts::Array& m, const ts::Array& rhs) { return ts::sum(ts::sin(la::solve(m, rhs))); };
    auto [ga, gb] = ts::grad<0, 1>(loss)(a, b);
    auto [da, db] = ts::grad<0, 1>(direct)(a, b);
    expect_close(ga, da, 1e-9, "d/dA");
    expect_close(gb, db, 1e-9, "d/db");
  }
  // Batched right-hand sides under vmap, and jit.
  const ts::Array bs = smooth({4, 3}, 3);
  const ts::Array xs = ts::vmap([&](const ts::Array& rhs) { return solved(a, rhs, true); })(bs);
  for (int64_t i = 0; i < 4; ++i) expect_close(xs[{i}], la::solve(a, bs[{i}]), 1e-10, "vmap");
  expect_close(ts::jit([&](const ts::Array& rhs) { return solved(a, rhs, false); })(b), la::solve(a, b), 1e-10, "jit");
  // Without transpose_solve (and not symmetric) reverse mode has nothing to solve with.
  expect_error<ts::ValueError>([&] { ts::grad([&](const ts::Array& rhs) { return ts::sum(lx::custom_linear_solve(mv, {a}, rhs, richardson)); })(b); },
                               {"custom_linear_solve", "transpose_solve"});
}

TEST(LinalgComposedCustomSolve, RootDifferentiatesImplicitly) {
  namespace lx = ts::lax::linalg;
  // x^2 = p element-wise, by 30 Newton steps in a while loop.
  auto f = [](const std::vector<ts::Array>& p, const ts::Array& x) { return x * x - p[0]; };
  auto newton = [](const std::function<ts::Array(const ts::Array&)>& g, const ts::Array& x0) {
    return ts::fori_loop(ts::Array(0), ts::Array(30), [&](const ts::Array&, const ts::Array& x) {
      return x - g(x) / (x * 2.0);
    }, x0);
  };
  // The Jacobian (and its transpose) is diagonal: its diagonal is what it makes of ones.
  auto diagonal_solve = [](const std::function<ts::Array(const ts::Array&)>& g, const ts::Array& y) {
    return y / g(ts::ones_like(y));
  };
  const ts::Array p = smooth({4}, 1) * ts::sign(smooth({4}, 1)) + 0.5;  // positive
  auto root = [&](const ts::Array& q) { return lx::custom_root(f, {q}, ts::ones_like(q), newton, diagonal_solve); };
  expect_close(root(p), ts::sqrt(p), 1e-12, "value");
  expect_close(ts::grad([&](const ts::Array& q) { return ts::sum(root(q)); })(p), ts::rsqrt(p) * 0.5, 1e-12, "grad");
  expect_close(ts::vmap(ts::grad([&](const ts::Array& q) { return ts::sum(root(q)); }))(ts::stack({p, p * 4.0})),
               ts::stack({ts::rsqrt(p) * 0.5, ts::rsqrt(p) * 0.25}), 1e-12, "vmap(grad)");
}

}  // namespace

namespace {

// ---- sharding: the compositions inherit their parts' rules ----

/// Eight well-conditioned 3 x 3 float64 matrices: a batch to split over two devices.
ts::Array well_conditioned_batch() {
  return arr({8, 3, 3}, 1, ts::f64) * 0.3 + ts::eye(3, std::nullopt, 0, ts::f64) * 2.0;
}

TEST(LinalgComposedSharding, BatchShardedCompositionsStayPartitioned) {
  const ts::NamedSharding rows = linalg_testing::batch_sharding();
  const ts::Array a = well_conditioned_batch();
  // Functions built from batch-partitioned primitives and element-wise work: no collective.
  auto f = [](const ts::Array& x) {
    return la::pinv(x) + sla::expm(x * 0.1) + la::matrix_power(x, 3) +
           ts::expand_dims(la::norm(x, "nuc", ts::Axes{1, 2}) + la::cond(x, 1) + la::vector_norm(x, 3, ts::Axes{1, 2}),
                           {1, 2});
  };
  auto jf = ts::jit(f, {.in_shardings = {rows}});
  linalg_testing::expect_no_batch_collectives(jf.lower(a).compile().as_text());
  expect_close(jf(ts::device_put(a, rows)), f(a), 1e-10, "sharded vs one device");
}

TEST(LinalgComposedSharding, BatchShardedEigAndSchurStayPartitioned) {
  const ts::NamedSharding rows = linalg_testing::batch_sharding();
  const ts::Array a = well_conditioned_batch();
  // Each device factors its half of the batch: no collective, and the values of one device.
  auto f = [](const ts::Array& x) {
    const auto r = ts::lax::linalg::eig(x, true, true);
    return std::make_tuple(r.eigenvalues, r.left_eigenvectors, r.right_eigenvectors, sla::schur(x).t);
  };
  auto jf = ts::jit(f, {.in_shardings = {rows}});
  linalg_testing::expect_no_batch_collectives(jf.lower(a).compile().as_text());
  const auto sharded = jf(ts::device_put(a, rows));
  const auto local = f(a);
  expect_close(std::get<0>(sharded), std::get<0>(local), 1e-10, "sharded eigenvalues");
  expect_close(std::get<1>(sharded), std::get<1>(local), 1e-10, "sharded left eigenvectors");
  expect_close(std::get<2>(sharded), std::get<2>(local), 1e-10, "sharded right eigenvectors");
  expect_close(std::get<3>(sharded), std::get<3>(local), 1e-10, "sharded schur form");
  // The results keep the batch sharding.
  EXPECT_TRUE(std::get<0>(sharded).sharding().spec().equivalent(ts::P("x"), 2)) << std::get<0>(sharded).sharding();
  EXPECT_TRUE(std::get<2>(sharded).sharding().spec().equivalent(ts::P("x"), 3)) << std::get<2>(sharded).sharding();
}

}  // namespace
