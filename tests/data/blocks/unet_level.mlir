module {
  func.func @main(%arg0: tensor<1x3x10x12xf32>) -> tensor<1x4x10x12xf32> {
    %0 = "tosa.const"() <{values = dense<[[180, 30, 6, 1]]> : tensor<1x4xi32>}> : () -> tensor<1x4xi32>
    %cst = arith.constant dense<[[[0]], [[1]], [[2]], [[3]], [[4]], [[5]]]> : tensor<6x1x1xi64>
    %1 = "tosa.const"() <{values = dense_resource<torch_tensor_4_torch.float32> : tensor<4xf32>}> : () -> tensor<4xf32>
    %2 = "tosa.const"() <{values = dense_resource<torch_tensor_6_torch.float32> : tensor<6xf32>}> : () -> tensor<6xf32>
    %3 = "tosa.const"() <{values = dense_resource<torch_tensor_8_torch.float32> : tensor<8xf32>}> : () -> tensor<8xf32>
    %4 = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1xf32>}> : () -> tensor<1xf32>
    %5 = "tosa.const"() <{values = dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]> : tensor<10xi64>}> : () -> tensor<10xi64>
    %6 = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %7 = tosa.const_shape  {values = dense<[10, 1]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %8 = "tosa.const"() <{values = dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]> : tensor<12xi64>}> : () -> tensor<12xi64>
    %9 = tosa.const_shape  {values = dense<[1, 6, 1, 1, 1]> : tensor<5xindex>} : () -> !tosa.shape<5>
    %10 = tosa.const_shape  {values = dense<[1, 1, 10, 1, 1]> : tensor<5xindex>} : () -> !tosa.shape<5>
    %11 = tosa.const_shape  {values = dense<[1, 1, 1, 12, 1]> : tensor<5xindex>} : () -> !tosa.shape<5>
    %12 = tosa.const_shape  {values = dense<[1, 6, 10, 12, 1]> : tensor<5xindex>} : () -> !tosa.shape<5>
    %13 = tosa.const_shape  {values = dense<[1, 1, 10, 12, 1]> : tensor<5xindex>} : () -> !tosa.shape<5>
    %14 = tosa.const_shape  {values = dense<[1, 6, 1, 12, 1]> : tensor<5xindex>} : () -> !tosa.shape<5>
    %15 = tosa.const_shape  {values = dense<[1, 6, 10, 1, 1]> : tensor<5xindex>} : () -> !tosa.shape<5>
    %16 = tosa.const_shape  {values = dense<[1, 180, 1]> : tensor<3xindex>} : () -> !tosa.shape<3>
    %17 = tosa.const_shape  {values = dense<[720, 4]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %18 = tosa.const_shape  {values = dense<[1, 720]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %19 = tosa.const_shape  {values = dense<[1, 6, 10, 12]> : tensor<4xindex>} : () -> !tosa.shape<4>
    %20 = tosa.const_shape  {values = dense<[1, 1, 1, 12]> : tensor<4xindex>} : () -> !tosa.shape<4>
    %21 = tosa.const_shape  {values = dense<[1, 1, 10, 1]> : tensor<4xindex>} : () -> !tosa.shape<4>
    %22 = "tosa.const"() <{values = dense<"0xD526C7BD2FF1E6BD9727E93D19235ABD56F83D3E0D1C393E6B477DBC170A8D3CBBA5BB3DB18524BEC7670A3E735F32BE13FD88BCE1CB423E5E85BD3DCB6423BE87D93E3EF1CCA93C0E29103ED4A71FBED885A73DB093A73D1BAD3EBE871AA7BC4F00113E2C3B1F3EBA21173EAD75F03D48AF33BE67C2853C117E0FBEBB8A843DEDBD41BEBE3B343DB035CB3D511C213D9837203E8EEA97BC106017BD4E90143EFBA1C4BDEFD33EBEAABC833D959BD43D90C81F3EF801133E32E322BD4F7853BD2D1C203E1005D83C5F1FF53DCD63A13DE1121A3E8ADA86BDFA13C4BD54B52C3EFF17C83DA935A1BD1B48EF3D0F5644BEF0F0183E75BDAABB1E8F3ABE1697113E04CB77BCBE72E7BD11A2BFBD696810BCDB6C9ABC8CA4453D4AADFCBDE87600BDE823393E40C9183E8393413B5EA5D0BCD3792ABECC8BE43D1E18103E021301BC03F297BB9F1AE73D762E343D6B3212BE84790E3E8D2815BD9BF98DBD50A944BED4E0123D3DC35DBCAD10453C426642BEBF8520BE8E1791BDB1CF55BC1DAC423EE27C49BD8CA626BEC237F23DCA37F73D3313CE3DDB84D9BC05690F3E5F91E3BDE7B8A53C49AA93BDCF43BE3DE9BF093EBAFBDC3D97DAB33D8CAC2E3B5D0125BE5F240D3E810315BD954F3EBEC248C1BD4D8D20BDD51F143EB62174BD4C8027BEDB00F53D2A5F02BEE83B623D707B2E3ED177D0BDEA7D083D631FD9BC858A2DBE7804953CB07BBABDD7BB21BEFC57A43D0CD8123CBE7230BE39361DBE9573EE3DD860B03DCE7D39BE3D0CC73D48FF5DBBB29506BE9A9D5B3BC9C93C3EBF7DF2BD828C4BBD61BBA53DB1CCA0BD59A131BEF6AC32BE84E29FBD9A8C973D6444CDBDC6DA833D01F211BE15D1D4BA374A7E3D5A6F27BCB1D5293E404E123E0AB7A73CF1F0E43C2CC6B2BBC3C2DEBCB042E9BD0BAF583D7469A33D616C623DEAF80C3CEE290C3E5B143FBE92503EBDE25A1FBE80DC273EDBEA10BE7F39DE3C0FD1263ED863243EAEFF09BD563B8F3DD1D535BED89D8D3CA5533A3D73DBFFBD9EB4933D53B4AFBD757829BE94E5093D937B0ABE22CA0FBE1BAD433E4F57143D4FE9B43B5A802E3E22292B3DD787283EB002C73DD7D51B3E831078BD1660353E9321AA3CCE66713B9FE2363E9036E5BC4F442A3C1162D33DD0673E3EA047BFBC4D4240BEFA95943DD7583ABE367D24BE58A0B23D9CFF3EBE126D16BD9545CABCD16ED13D"> : tensor<8x3x3x3xf32>}> : () -> tensor<8x3x3x3xf32>
    %23 = "tosa.const"() <{values = dense<"0x39A2BF3DFF53973C71B1E23D9C4083BDF5DDE5BD15CD81BD2849DF3D770D653DB330A63C1F7E30BD674361BD976DCB3D211FB2BD5E3830BDAD29ED3DB011103CA2DC363DBDBBA83A6F508CBCFB8519BD0705F5BC72A07D3D0C3F0ABD384EDD3C0531E9BBD6FFD6BDD832E93C0A79C6BC50CCBE3DED53D13D2938D3BCB3022FBCF9AC9F3D604C96BD6B34E1BB4BDCEC3A235D1CBDD81C5FBCBC14BB3D80E230BDDC260B3BFB31AD3DB3D3E6BD7B5ED5BDDDD920BDF5ABBB3D0B0ED93D949C3BBA824A8ABD387EA3BDA8A1CEBC358C2BBD1B8126BBEDB74C3C24715ABDDF9CCFBDAB9CD4BDCA48D93AD093A9BDBD9F86BC66B4D73DAB8DB73DAF32383D38A8B5BDF32E5F3DA0F51DBD583CE83D9D2712BD213B3ABDF3E4D93D19890F3C14CDF5BB19AD53BD6307C33DE71F323B68B2B33D2359D33D0EC5D83D35BDC23D4E9F92BD54DA02BDA5640ABB66F009BDEFDBC33D431D303D268DB1BD7A90803D3E65E53DF3E18B3DC93997BDED3E7F3D1A0B543DD529853DBE02B2BD1633EF3D7A13EA3D5C3EAB3D0457833CC76A4C3D034A8BBC95814CBD698D983D0DF8063DA738793D002E103D85F1193DCEE5C0BC18D69D3D2B6C9D3DD37EE73CFE0959BD0DEAD73D502840BD974AE0BD065D1D3DB6358BBA4065963D6A67A63B364C68BCD573ADBC57C2443C3E33913D9480EA3D9C25ECBD60285C3D8A4273BCA6E0A53DC8DE193D66DA23BC7F92E53DC830833DD35FA63D685A0BBD3B104F3DEF67EBBD4E05B83DBC18E63DD658B1BDFDBAB0BCED2BA8BDA9A1C8BD2202F1BBA97B8D3B6808CA3D4B5FD23D7418423CC288D33D1E5ACDBD3115543D71C42D3C4D12B73C7517C1BDDD0AE83C33CD30BD67D232BD56D684BD156AB8BDB3A901BD8F1995BDF91218BD55BD07BD4702D53C55ED47BB22C3B6BB1A5DAD3D3FC2423D01A7893D556DDDBB2788E83D799858BDA5EE6A3D7666E73B0E71EF3DF69D9B3D95F490BDD6E88EBDB8F9D03DAEF0193D083C3CBC55F3343C2AEBE9BD02F28F3DCBDF543D9F02343C0CBFE43D6AE1CABD163AE6BCF2D089BD7A3B303D48FDE83DDD3880BD3226C83DE6BEF0BC88181BBD8200D33C540DAFBDEB4D4C3D111703BD39CD35BDD3F7803DDE100B3D0DE5BF3D3B240E3DEBE3A8BDBBDEBFBC64A8C0BD413297BD5AA67C3DCDBE57BDED3483BC74A6E7BCF77CE43C981CE53D18AA6F3D33F0E8BCE5A8AEBC921AB33C701B88BD82859E3CD368B9BD96DA9E3DE6F12B3D440AC93DBF53183D04EC763DE7E9D0BB745DAC3D9B603BBD73AB5ABD8603933C816B9EBD7BD4E7BDC5F7BDBD04B9B4BDA64AD9BD7141863D0DD9AD3DB9ABCABC26DA463D02329E3B33B3003D9C0FCEBD6A8706BD0D25D4BDF8F79EBDE4559CBB79CEEF3D7CCEAC393062883DA42413BC1B3D74BD41CBEEBD642604BD73D6F5BC1E29B53D9662853D8776E93D362F80BD433298BD6ADA38BAE33A9C3D470079BD8FE394BDD776C03D5381ADBC7B51CD3D479934BDD3B9D53DA96FE33DE8A996BD5053C63D9B5288BDED25613D87DB42BDDC433FBD1A67A9BDB1F9E73DCCB68D3DDEEDA03CE0D74B3DF803B13DCD6A8A3D0B39A2BDDB33C73DD4D4CB3DACC0E23D960269BCDCD799BD33A23EBDF953CB3DB501E9BD8B6ADBBDC80A95BDD16889BDA8BCC53CACE5C3BDBCB5553C143BB1BDA03902BDBE40C1BD9F18EE3DD9DEB7BDA807903D01C7573C077C943D557E943D85B4ECBD4A2983BDB82355BC148CE5BC831F59BD66CEFFBCD3940FBDD00D02BD8DFDF8BB7BD798BDA1F6DC3C9F256B3D2A5DC4BC1FE9793D6007023D6D60F0BDF16FA9BD83D0603DBFEBAB3D5BBBACBDD3BFBBBD10B9C53C8B0D753D503170BDE171CF3DD6CEB8BD1755993CF7068D3DD46CB9BD4930D63DA4320F3D1ABDAEBDA66CCBBCE0F1B5BD69EA59BDFA28D13D9DB5CF3D23C0AB3D9A6E0B3D378AA3BD466D8C3D472CAF3DB5EDE9BDC9A23E3D6CA605BD865D9D3DF08BDABC5D4CED3D188A20BD9610CDBD41B2CCBD78903ABCAEBD833D5127993D00A4DD3D9E12AC3DFC14A6BDDCA7E43DEF0975BD6F7F7D385EB2B53CD945223D21664F3D1526D1BD3FF9AD3D440507BCB0F1A23D23BCD8BC3767CA3D405F183D3F1DA2BDA86AA83B3AD5BB3D4C7A903DECD6953D461F113DFE6FEF3D20C5073B5508813D6BD0FABC46F2133D492698BD1CA18E38CA92543DDCFEAE3DF4AD97BD1D529A3D648AA93C640B82BDF025F63C6E9876BC0576993D5211EBBD2BE7D5BD0A4CB23C68D2423DC9BB523DA966333DD09D083DF94FC83CBD5674BD0026C6BD4C92113C677DB9BCADB59DBCBCC7E1BD24E99A3D8E78D4BD59F78FBD980F703D1D9DD6BD0FDF82BDF10ABABDA51F593DB855E03DC9BDA83DE5EFBFBDF64EE33D6620CBBDB7B6993DC0F0403DEBADA7BCACA4CB3D3D205B3D0533753DA378A0BC"> : tensor<6x3x3x8xf32>}> : () -> tensor<6x3x3x8xf32>
    %24 = "tosa.const"() <{values = dense<5.000000e-01> : tensor<1xf32>}> : () -> tensor<1xf32>
    %25 = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
    %26 = "tosa.const"() <{values = dense<1> : tensor<1x1xi32>}> : () -> tensor<1x1xi32>
    %27 = "tosa.const"() <{values = dense<-9223372036854775808> : tensor<1x1xi64>}> : () -> tensor<1x1xi64>
    %28 = "tosa.const"() <{values = dense<4> : tensor<1x1xi64>}> : () -> tensor<1x1xi64>
    %29 = "tosa.const"() <{values = dense<1> : tensor<1xi32>}> : () -> tensor<1xi32>
    %30 = "tosa.const"() <{values = dense<-9223372036854775808> : tensor<1xi64>}> : () -> tensor<1xi64>
    %31 = "tosa.const"() <{values = dense<5> : tensor<1xi64>}> : () -> tensor<1xi64>
    %32 = "tosa.const"() <{values = dense<0> : tensor<1x1x1x1x1xi32>}> : () -> tensor<1x1x1x1x1xi32>
    %33 = "tosa.const"() <{values = dense<0> : tensor<1x1x1xi32>}> : () -> tensor<1x1x1xi32>
    %34 = "tosa.const"() <{values = dense<6> : tensor<1x1x1xi32>}> : () -> tensor<1x1x1xi32>
    %35 = "tosa.const"() <{values = dense<0> : tensor<1x1xi32>}> : () -> tensor<1x1xi32>
    %36 = "tosa.const"() <{values = dense<5> : tensor<1x1xi32>}> : () -> tensor<1x1xi32>
    %37 = "tosa.const"() <{values = dense<0> : tensor<1xi32>}> : () -> tensor<1xi32>
    %38 = "tosa.const"() <{values = dense<6> : tensor<1xi32>}> : () -> tensor<1xi32>
    %39 = "tosa.const"() <{values = dense<"0x8DAC9BBCF79A923B6764A23D55E694BDC2A89F3D363F30BDC5ECF03998CE363DA9392ABD6593D23CE29790BCE869AC3C1872C03C828A703C1A486FBDC8E88A3D6FBF7F3C803F6E3DF25B603DC7E660BDAD86A13D67F7A3BD32B40D3D2F9832BDF4E18C3D4906763D76F1A73D8F08A73D7737F739076C543DD5CD443D8A826E3D16257A3CB0AD713D2705B3BD411F06BDE071A23CCD50A3BDD75166BCAD399EBD118A473D625280BDF76958BCF2593E3D2B0FBA3CBEDC5F3C3F79AABCC8FD7ABDA87941BDB6FDA83D1B24A63D1AD190BC671A69BD136AA53C8BF3713DE5D4B23D5F0581BCFF7685BD1CF172BD9CBFBCBCE4C364BD27E4D23CC3E49E3DB9E38B3D75E79ABD4F95A4BD4B8B06BD6276AD3DA75327BD2D5257BDAD34343D3D2112BD4BDDB4BD73D8DE3C075BD23CDD895ABD6C4FD23BB0D7C93CDB30A6BD8E3F79BC79EEE4BB78014D3CA1DFF0BC765335BD1720A23C9A3D9E3DC804BBBCEE50ADBCDB1333BC133071BD59571B3D90B2853D925E473C5FCD05BD2C968DBC7B27093D4BB67F3D2A4C9DBB72790B3DB9D4573D27871A3DDBA653BD7028093DB7423ABDF98426BC8D87A1BB75EE4B3B2D14A23CBEC1AEBDC19DAFBC9911B7BC39570E3DF4B7A3BC77C5B7BC16BE7F3D4654B13D65BCADBC44E838BD42C900BC10E692BD5CA796BD7A82A63C30BF673C43F5993DA86882BD5A799A3D7DE387BDE83776BD395D79BC122C4B3D2B571E3D73203ABDF9E79CBD4CA43E3D3B3AD93C9BAD603C8369A63DF6D3E5B98C4C1BBD60DDC83CA214603D683564BD951966BD83B58F3CF6E44C3D9021653CE0D7973D0CC573BD989CD53BF598D33B653698BD9D3A53BBA95656BD466BA7BD5A63ADBD1592843D5669373DA77584BD1D52743D7F59E43C86D09DBD34B9B53D07BCC13B5E51583D2F4B8DBD4C48AEBDC8F850BD1864053D8BED11BD16E6EBBB09FAF9BC16A5F7BCB14B363D7AC2E83C9999BEBCE7E4473D5AF1F6BB633399BD290C17BDC679EE3B6E8A073D97E2483B926EA2BDB9A353BDE1D89ABC2B7DAFBDF2FA2E3CCD55853D804D7A3D7497A63D00EBA73D6ADE323D124CC63C0504AB3DBD60883C4A58833DBB37BC3BAE6B3D3DDC2DDA3C916833BD4DBE0CBD3D7975BD066FE0BCBB1F76BD534AA6BDD2C174BD04A0473D37798A3DACC5A1BD875C8B3D844AE33C605AAB3D49B1A0BDBA6A273D267F9F3D9086AC3DAC904F3DAFE17E3D762391BDE38F97BD9077B1B918CEA2BD664AAD3D97BE843D5EE61BBDB001B5BCD52C4DBD5AA0D83C8873A2BDC2A3A5BB9395AA3DEC15503DE157A9BDBF3AA8BD657C1A3D6C00B2BC5A4B9DBD5F892A3D0F3BD3BC027BB33D00E58ABD3BBE83BA1D87653D40B4A13DC11AAEBD33E6DDB9D35ACD3C74386FBD6266453CF80DBFBB2E31FD3B6DC503BD059E65BC4571A5BD4ECCEFBB92F5A83DFC809E3C84C0A0BD9F04933DBADD08BDA1018BBD0746CF3C00F2C83BED9A47BB1CC2993D3F6B683DA149A43D7D2691BCBF7582BC3590E8BCA1B6B2BD8AD2A1BCE16903BD991A443DF07804BD99E408BD7B80A93D9E3A0F3D6390C2BC06C6993DB029733DD25CB03DA5871A3D4AFFD13C92F8D03C42230CBD8F1DE23C9D7653BD564B23BD451E0DBD08538E3DC44A3EBD983BF63C064572BD49D4A33DD67F0A3D3663A03D82AD9B3C0BCBA0BC44BB89BC8B38B5BB8169623DB6BC2CBD4FE07FBC1338A43D1467ACBCF9202E3DC3E77C3DDE7782BD9B7BC53C6C1B4CBD2105B4BD69D98DBC0810A73D8D3B8CBD5F184B3D9FE6BDBC1A17723D44E21D3D428A2D3C657B31BC09E8AC3D1BD78B3D1AA1A3BB24ADB2BCFDE1ADBCCE588ABDC0B80ABDA51FC83C617A8C3D467569BD027C7C3D4C0E6C3D9488F7BC92F707BBF1D8B03C4740953DD3FB4D3D46F9CC3C33CC373D8FC1A33D69133ABDD33E92BD4EF21B3DC62DC4BC7A67843DC5CD953D2146ADBD76451E3D4C748FBD6282BC3BFA5B123C445E3A3D6958AB3DA57029BD44CB8F3D4CB21B3DB7FA373DAAB8A63D86413EBD698FAF3C4E4BEA3C348A9EBD0BC18ABD54E7A63D1C3C0FBDF3330C3DB449A5BD4BB8A53C43BB37BD18BEA23DCF51F23C23A18F3D322A90BC90DAACBD816E8DBD458B6ABC16F9D8BA707183BB4BEDA63C70D6A13C69DE723B142DAFBD8F75873D67D9A1BCB25F853DDC11CD3C8D809C3DA14C243D329F293D9958803DD731773DC5E87BBD67D79EBDDA9567BCCC49873D97820C3D3F56A5BDB92047BD43EC8C3CA8ECD83CFD788EBC0CC2AEBD3FEDAB3DA4A1A2BD35E8693DBE9F933DDCBA8CBC5831BBBC6750143D3674073CDE68513CC87568BD0FBD253D1FD707BD65008CBD3816E63C1224423D2427D93B061721BD3867233D90D390BDB05F6B3DB55BB33D6037C13B0DF756BD241256BC8E559E3B6D2EECBB4C66EA3B5B72B6BD28B1483DCD26AF3D06DA6FBD2C9BA03D07D1383D3BA568BD63CB2B3D2A34993D75FC88BD041F0C3DA3DECC3B3AA5243D48EB4BBDDFD0063D42DAA5BC4B055BBDB3D02F3DDA7790BDDA36353952BC3EBC0B4B1F3D07C716BD74DA04BD516CEC3C7E51263DE3E799BD77FB2DBD9B4C14BDB33B78BD9AD8933D99978D3DBAA193BDD065F7BCAA469D3D4EB6D9B96E3290BD9B835D3D1A5F96BD289113BD372CEFBC298A643D625FE63CB2C5863D7248503C042885BDD4FF8D3C48BAABBD53289C3D51F623BDC82305BD12583DBDAD86F8BC3146B3BC5CC946BD01B642BC8CAE91BC5E3A3BBCD990B3BBAC628B3B2BA5B5BDC13952BD0D1B9A3D0F0D96BC95E6AB3D56B93ABD67BD57BC3A4BDEBB2311E4BC40DDA9BD9FBE2A3C941B193D1826B0BD64A67B3D"> : tensor<4x3x3x14xf32>}> : () -> tensor<4x3x3x14xf32>
    %40 = tosa.transpose %arg0 {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x3x10x12xf32>) -> tensor<1x10x12x3xf32>
    %41 = tosa.conv2d %40, %22, %3, %4, %4 {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x10x12x3xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x10x12x8xf32>
    %42 = tosa.transpose %41 {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x10x12x8xf32>) -> tensor<1x8x10x12xf32>
    %43 = tosa.clamp %42 {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32} : (tensor<1x8x10x12xf32>) -> tensor<1x8x10x12xf32>
    %44 = tosa.transpose %43 {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x8x10x12xf32>) -> tensor<1x10x12x8xf32>
    %45 = tosa.max_pool2d %44 {kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x10x12x8xf32>) -> tensor<1x5x6x8xf32>
    %46 = tosa.conv2d %45, %23, %2, %4, %4 {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x5x6x8xf32>, tensor<6x3x3x8xf32>, tensor<6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x5x6x6xf32>
    %47 = tosa.transpose %46 {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x5x6x6xf32>) -> tensor<1x6x5x6xf32>
    %48 = tosa.clamp %47 {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32} : (tensor<1x6x5x6xf32>) -> tensor<1x6x5x6xf32>
    %49 = tosa.cast %5 : (tensor<10xi64>) -> tensor<10xf32>
    %50 = tosa.add %49, %24 : (tensor<10xf32>, tensor<1xf32>) -> tensor<10xf32>
    %51 = tosa.mul %50, %24, %6 : (tensor<10xf32>, tensor<1xf32>, tensor<1xi8>) -> tensor<10xf32>
    %52 = tosa.sub %51, %24 : (tensor<10xf32>, tensor<1xf32>) -> tensor<10xf32>
    %53 = tosa.clamp %52 {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32} : (tensor<10xf32>) -> tensor<10xf32>
    %54 = tosa.reshape %53, %7 : (tensor<10xf32>, !tosa.shape<2>) -> tensor<10x1xf32>
    %55 = tosa.floor %54 : (tensor<10x1xf32>) -> tensor<10x1xf32>
    %56 = tosa.ceil %54 : (tensor<10x1xf32>) -> tensor<10x1xf32>
    %57 = tosa.greater %25, %54 : (tensor<1x1xf32>, tensor<10x1xf32>) -> tensor<10x1xi1>
    %58 = tosa.select %57, %56, %55 : (tensor<10x1xi1>, tensor<10x1xf32>, tensor<10x1xf32>) -> tensor<10x1xf32>
    %59 = tosa.cast %58 : (tensor<10x1xf32>) -> tensor<10x1xi64>
    %60 = tosa.cast %59 : (tensor<10x1xi64>) -> tensor<10x1xi32>
    %61 = tosa.add %60, %26 : (tensor<10x1xi32>, tensor<1x1xi32>) -> tensor<10x1xi32>
    %62 = tosa.cast %61 : (tensor<10x1xi32>) -> tensor<10x1xi64>
    %63 = tosa.maximum %62, %27 : (tensor<10x1xi64>, tensor<1x1xi64>) -> tensor<10x1xi64>
    %64 = tosa.minimum %63, %28 : (tensor<10x1xi64>, tensor<1x1xi64>) -> tensor<10x1xi64>
    %65 = tosa.cast %8 : (tensor<12xi64>) -> tensor<12xf32>
    %66 = tosa.add %65, %24 : (tensor<12xf32>, tensor<1xf32>) -> tensor<12xf32>
    %67 = tosa.mul %66, %24, %6 : (tensor<12xf32>, tensor<1xf32>, tensor<1xi8>) -> tensor<12xf32>
    %68 = tosa.sub %67, %24 : (tensor<12xf32>, tensor<1xf32>) -> tensor<12xf32>
    %69 = tosa.clamp %68 {max_val = 3.40282347E+38 : f32, min_val = 0.000000e+00 : f32} : (tensor<12xf32>) -> tensor<12xf32>
    %70 = tosa.floor %69 : (tensor<12xf32>) -> tensor<12xf32>
    %71 = tosa.ceil %69 : (tensor<12xf32>) -> tensor<12xf32>
    %72 = tosa.greater %4, %69 : (tensor<1xf32>, tensor<12xf32>) -> tensor<12xi1>
    %73 = tosa.select %72, %71, %70 : (tensor<12xi1>, tensor<12xf32>, tensor<12xf32>) -> tensor<12xf32>
    %74 = tosa.cast %73 : (tensor<12xf32>) -> tensor<12xi64>
    %75 = tosa.cast %74 : (tensor<12xi64>) -> tensor<12xi32>
    %76 = tosa.add %75, %29 : (tensor<12xi32>, tensor<1xi32>) -> tensor<12xi32>
    %77 = tosa.cast %76 : (tensor<12xi32>) -> tensor<12xi64>
    %78 = tosa.maximum %77, %30 : (tensor<12xi64>, tensor<1xi64>) -> tensor<12xi64>
    %79 = tosa.minimum %78, %31 : (tensor<12xi64>, tensor<1xi64>) -> tensor<12xi64>
    %80 = tosa.cast %cst : (tensor<6x1x1xi64>) -> tensor<6x1x1xi32>
    %81 = tosa.add %80, %34 : (tensor<6x1x1xi32>, tensor<1x1x1xi32>) -> tensor<6x1x1xi32>
    %82 = tosa.greater %33, %80 : (tensor<1x1x1xi32>, tensor<6x1x1xi32>) -> tensor<6x1x1xi1>
    %83 = tosa.select %82, %81, %80 : (tensor<6x1x1xi1>, tensor<6x1x1xi32>, tensor<6x1x1xi32>) -> tensor<6x1x1xi32>
    %84 = tosa.cast %59 : (tensor<10x1xi64>) -> tensor<10x1xi32>
    %85 = tosa.add %84, %36 : (tensor<10x1xi32>, tensor<1x1xi32>) -> tensor<10x1xi32>
    %86 = tosa.greater %35, %84 : (tensor<1x1xi32>, tensor<10x1xi32>) -> tensor<10x1xi1>
    %87 = tosa.select %86, %85, %84 : (tensor<10x1xi1>, tensor<10x1xi32>, tensor<10x1xi32>) -> tensor<10x1xi32>
    %88 = tosa.cast %74 : (tensor<12xi64>) -> tensor<12xi32>
    %89 = tosa.add %88, %38 : (tensor<12xi32>, tensor<1xi32>) -> tensor<12xi32>
    %90 = tosa.greater %37, %88 : (tensor<1xi32>, tensor<12xi32>) -> tensor<12xi1>
    %91 = tosa.select %90, %89, %88 : (tensor<12xi1>, tensor<12xi32>, tensor<12xi32>) -> tensor<12xi32>
    %92 = tosa.reshape %83, %9 : (tensor<6x1x1xi32>, !tosa.shape<5>) -> tensor<1x6x1x1x1xi32>
    %93 = tosa.reshape %87, %10 : (tensor<10x1xi32>, !tosa.shape<5>) -> tensor<1x1x10x1x1xi32>
    %94 = tosa.reshape %91, %11 : (tensor<12xi32>, !tosa.shape<5>) -> tensor<1x1x1x12x1xi32>
    %95 = tosa.tile %32, %12 : (tensor<1x1x1x1x1xi32>, !tosa.shape<5>) -> tensor<1x6x10x12x1xi32>
    %96 = tosa.tile %92, %13 : (tensor<1x6x1x1x1xi32>, !tosa.shape<5>) -> tensor<1x6x10x12x1xi32>
    %97 = tosa.tile %93, %14 : (tensor<1x1x10x1x1xi32>, !tosa.shape<5>) -> tensor<1x6x10x12x1xi32>
    %98 = tosa.tile %94, %15 : (tensor<1x1x1x12x1xi32>, !tosa.shape<5>) -> tensor<1x6x10x12x1xi32>
    %99 = tosa.concat %95, %96, %97, %98 {axis = 4 : i32} : (tensor<1x6x10x12x1xi32>, tensor<1x6x10x12x1xi32>, tensor<1x6x10x12x1xi32>, tensor<1x6x10x12x1xi32>) -> tensor<1x6x10x12x4xi32>
    %100 = tosa.reshape %48, %16 : (tensor<1x6x5x6xf32>, !tosa.shape<3>) -> tensor<1x180x1xf32>
    %101 = tosa.reshape %99, %17 : (tensor<1x6x10x12x4xi32>, !tosa.shape<2>) -> tensor<720x4xi32>
    %102 = tosa.mul %101, %0, %6 : (tensor<720x4xi32>, tensor<1x4xi32>, tensor<1xi8>) -> tensor<720x4xi32>
    %103 = tosa.reduce_sum %102 {axis = 1 : i32} : (tensor<720x4xi32>) -> tensor<720x1xi32>
    %104 = tosa.reshape %103, %18 : (tensor<720x1xi32>, !tosa.shape<2>) -> tensor<1x720xi32>
    %105 = tosa.gather %100, %104 : (tensor<1x180x1xf32>, tensor<1x720xi32>) -> tensor<1x720x1xf32>
    %106 = tosa.reshape %105, %19 : (tensor<1x720x1xf32>, !tosa.shape<4>) -> tensor<1x6x10x12xf32>
    %107 = tosa.cast %79 : (tensor<12xi64>) -> tensor<12xi32>
    %108 = tosa.add %107, %38 : (tensor<12xi32>, tensor<1xi32>) -> tensor<12xi32>
    %109 = tosa.greater %37, %107 : (tensor<1xi32>, tensor<12xi32>) -> tensor<12xi1>
    %110 = tosa.select %109, %108, %107 : (tensor<12xi1>, tensor<12xi32>, tensor<12xi32>) -> tensor<12xi32>
    %111 = tosa.reshape %110, %11 : (tensor<12xi32>, !tosa.shape<5>) -> tensor<1x1x1x12x1xi32>
    %112 = tosa.tile %111, %15 : (tensor<1x1x1x12x1xi32>, !tosa.shape<5>) -> tensor<1x6x10x12x1xi32>
    %113 = tosa.concat %95, %96, %97, %112 {axis = 4 : i32} : (tensor<1x6x10x12x1xi32>, tensor<1x6x10x12x1xi32>, tensor<1x6x10x12x1xi32>, tensor<1x6x10x12x1xi32>) -> tensor<1x6x10x12x4xi32>
    %114 = tosa.reshape %113, %17 : (tensor<1x6x10x12x4xi32>, !tosa.shape<2>) -> tensor<720x4xi32>
    %115 = tosa.mul %114, %0, %6 : (tensor<720x4xi32>, tensor<1x4xi32>, tensor<1xi8>) -> tensor<720x4xi32>
    %116 = tosa.reduce_sum %115 {axis = 1 : i32} : (tensor<720x4xi32>) -> tensor<720x1xi32>
    %117 = tosa.reshape %116, %18 : (tensor<720x1xi32>, !tosa.shape<2>) -> tensor<1x720xi32>
    %118 = tosa.gather %100, %117 : (tensor<1x180x1xf32>, tensor<1x720xi32>) -> tensor<1x720x1xf32>
    %119 = tosa.reshape %118, %19 : (tensor<1x720x1xf32>, !tosa.shape<4>) -> tensor<1x6x10x12xf32>
    %120 = tosa.cast %64 : (tensor<10x1xi64>) -> tensor<10x1xi32>
    %121 = tosa.add %120, %36 : (tensor<10x1xi32>, tensor<1x1xi32>) -> tensor<10x1xi32>
    %122 = tosa.greater %35, %120 : (tensor<1x1xi32>, tensor<10x1xi32>) -> tensor<10x1xi1>
    %123 = tosa.select %122, %121, %120 : (tensor<10x1xi1>, tensor<10x1xi32>, tensor<10x1xi32>) -> tensor<10x1xi32>
    %124 = tosa.reshape %123, %10 : (tensor<10x1xi32>, !tosa.shape<5>) -> tensor<1x1x10x1x1xi32>
    %125 = tosa.tile %124, %14 : (tensor<1x1x10x1x1xi32>, !tosa.shape<5>) -> tensor<1x6x10x12x1xi32>
    %126 = tosa.concat %95, %96, %125, %98 {axis = 4 : i32} : (tensor<1x6x10x12x1xi32>, tensor<1x6x10x12x1xi32>, tensor<1x6x10x12x1xi32>, tensor<1x6x10x12x1xi32>) -> tensor<1x6x10x12x4xi32>
    %127 = tosa.reshape %126, %17 : (tensor<1x6x10x12x4xi32>, !tosa.shape<2>) -> tensor<720x4xi32>
    %128 = tosa.mul %127, %0, %6 : (tensor<720x4xi32>, tensor<1x4xi32>, tensor<1xi8>) -> tensor<720x4xi32>
    %129 = tosa.reduce_sum %128 {axis = 1 : i32} : (tensor<720x4xi32>) -> tensor<720x1xi32>
    %130 = tosa.reshape %129, %18 : (tensor<720x1xi32>, !tosa.shape<2>) -> tensor<1x720xi32>
    %131 = tosa.gather %100, %130 : (tensor<1x180x1xf32>, tensor<1x720xi32>) -> tensor<1x720x1xf32>
    %132 = tosa.reshape %131, %19 : (tensor<1x720x1xf32>, !tosa.shape<4>) -> tensor<1x6x10x12xf32>
    %133 = tosa.concat %95, %96, %125, %112 {axis = 4 : i32} : (tensor<1x6x10x12x1xi32>, tensor<1x6x10x12x1xi32>, tensor<1x6x10x12x1xi32>, tensor<1x6x10x12x1xi32>) -> tensor<1x6x10x12x4xi32>
    %134 = tosa.reshape %133, %17 : (tensor<1x6x10x12x4xi32>, !tosa.shape<2>) -> tensor<720x4xi32>
    %135 = tosa.mul %134, %0, %6 : (tensor<720x4xi32>, tensor<1x4xi32>, tensor<1xi8>) -> tensor<720x4xi32>
    %136 = tosa.reduce_sum %135 {axis = 1 : i32} : (tensor<720x4xi32>) -> tensor<720x1xi32>
    %137 = tosa.reshape %136, %18 : (tensor<720x1xi32>, !tosa.shape<2>) -> tensor<1x720xi32>
    %138 = tosa.gather %100, %137 : (tensor<1x180x1xf32>, tensor<1x720xi32>) -> tensor<1x720x1xf32>
    %139 = tosa.reshape %138, %19 : (tensor<1x720x1xf32>, !tosa.shape<4>) -> tensor<1x6x10x12xf32>
    %140 = tosa.cast %74 : (tensor<12xi64>) -> tensor<12xf32>
    %141 = tosa.sub %69, %140 : (tensor<12xf32>, tensor<12xf32>) -> tensor<12xf32>
    %142 = tosa.clamp %141 {max_val = 1.000000e+00 : f32, min_val = 0.000000e+00 : f32} : (tensor<12xf32>) -> tensor<12xf32>
    %143 = tosa.sub %119, %106 : (tensor<1x6x10x12xf32>, tensor<1x6x10x12xf32>) -> tensor<1x6x10x12xf32>
    %144 = tosa.reshape %142, %20 : (tensor<12xf32>, !tosa.shape<4>) -> tensor<1x1x1x12xf32>
    %145 = tosa.mul %143, %144, %6 : (tensor<1x6x10x12xf32>, tensor<1x1x1x12xf32>, tensor<1xi8>) -> tensor<1x6x10x12xf32>
    %146 = tosa.add %106, %145 : (tensor<1x6x10x12xf32>, tensor<1x6x10x12xf32>) -> tensor<1x6x10x12xf32>
    %147 = tosa.sub %139, %132 : (tensor<1x6x10x12xf32>, tensor<1x6x10x12xf32>) -> tensor<1x6x10x12xf32>
    %148 = tosa.mul %147, %144, %6 : (tensor<1x6x10x12xf32>, tensor<1x1x1x12xf32>, tensor<1xi8>) -> tensor<1x6x10x12xf32>
    %149 = tosa.add %132, %148 : (tensor<1x6x10x12xf32>, tensor<1x6x10x12xf32>) -> tensor<1x6x10x12xf32>
    %150 = tosa.cast %59 : (tensor<10x1xi64>) -> tensor<10x1xf32>
    %151 = tosa.sub %54, %150 : (tensor<10x1xf32>, tensor<10x1xf32>) -> tensor<10x1xf32>
    %152 = tosa.clamp %151 {max_val = 1.000000e+00 : f32, min_val = 0.000000e+00 : f32} : (tensor<10x1xf32>) -> tensor<10x1xf32>
    %153 = tosa.sub %149, %146 : (tensor<1x6x10x12xf32>, tensor<1x6x10x12xf32>) -> tensor<1x6x10x12xf32>
    %154 = tosa.reshape %152, %21 : (tensor<10x1xf32>, !tosa.shape<4>) -> tensor<1x1x10x1xf32>
    %155 = tosa.mul %153, %154, %6 : (tensor<1x6x10x12xf32>, tensor<1x1x10x1xf32>, tensor<1xi8>) -> tensor<1x6x10x12xf32>
    %156 = tosa.add %146, %155 : (tensor<1x6x10x12xf32>, tensor<1x6x10x12xf32>) -> tensor<1x6x10x12xf32>
    %157 = tosa.concat %43, %156 {axis = 1 : i32} : (tensor<1x8x10x12xf32>, tensor<1x6x10x12xf32>) -> tensor<1x14x10x12xf32>
    %158 = tosa.transpose %157 {perms = array<i32: 0, 2, 3, 1>} : (tensor<1x14x10x12xf32>) -> tensor<1x10x12x14xf32>
    %159 = tosa.conv2d %158, %39, %1, %4, %4 {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x10x12x14xf32>, tensor<4x3x3x14xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x10x12x4xf32>
    %160 = tosa.transpose %159 {perms = array<i32: 0, 3, 1, 2>} : (tensor<1x10x12x4xf32>) -> tensor<1x4x10x12xf32>
    return %160 : tensor<1x4x10x12xf32>
  }
}

{-#
  dialect_resources: {
    builtin: {
      torch_tensor_4_torch.float32: "0x0400000014F490BD6A3038BC5FCCACBC3F2621BD",
      torch_tensor_6_torch.float32: "0x040000007DF6943DDA2AB03D46AB293C4A7BA03DBF3553BD1775E7BD",
      torch_tensor_8_torch.float32: "0x04000000469F923D092BAB3DDB7ADCBDC69031BEC20945BE7F4ECF3D491629BD8BA99E3D"
    }
  }
#-}
